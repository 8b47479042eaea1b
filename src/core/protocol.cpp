// check_message: what a received message must look like before the
// progress engine trusts its header (protocol.hpp).
#include "core/protocol.hpp"

#include <cstring>

#include "resource/packet_pool.hpp"

namespace lci
{

// A packet pool reserves room for the header without knowing its type.
static_assert(packet_pool_impl_t::kHeaderBytes == sizeof(msg_header_t),
              "the packet pool's header room is the wire header");

namespace
{

// The payload size of each control message; 0 for messages whose payload
// is user data (any size).
size_t control_payload(msg_type_t type)
{
  switch (type) {
    case msg_type_t::rts_send:
    case msg_type_t::rts_am:
      return sizeof(rts_t);
    case msg_type_t::rtr:
      return sizeof(rtr_t);
    case msg_type_t::fin:
      return sizeof(fin_t);
    case msg_type_t::signal:
      return sizeof(signal_t);
    case msg_type_t::put_ack:
      return sizeof(put_ack_t);
    default:
      return 0;
  }
}

}  // namespace

const char* check_message(const void* data, size_t len, int rank_n,
                          msg_header_t* hdr)
{
  if (len < sizeof(msg_header_t)) return "shorter than the 16-byte header";
  msg_header_t h;
  std::memcpy(&h, data, sizeof(h));
  if (is_good_data_header(h, rank_n)) {  // the common case, no more to check
    *hdr = h;
    return nullptr;
  }
  const uint32_t type = static_cast<uint32_t>(h.type());
  if (type < static_cast<uint32_t>(msg_type_t::send) ||
      type > static_cast<uint32_t>(msg_type_t::heartbeat))
    return "unknown message type";
  if (static_cast<uint32_t>(h.policy()) >
      static_cast<uint32_t>(matching_policy_t::rank_tag))
    return "unknown matching policy";
  if (h.rank < 0 || h.rank >= rank_n) return "sender rank out of range";
  const size_t payload = len - sizeof(h);
  const size_t expected = control_payload(h.type());
  if (expected != 0 && payload != expected)
    return "control message of the wrong size";
  if (h.type() == msg_type_t::heartbeat && payload != 0)
    return "heartbeat with a payload";
  if (h.type() == msg_type_t::put) {
    put_t put;
    if (payload < sizeof(put)) return "put message shorter than its signal";
    std::memcpy(&put, static_cast<const char*>(data) + sizeof(h), sizeof(put));
    if (put.signal.size != payload - sizeof(put))
      return "put message whose signal names another size";
  }
  if (h.type() == msg_type_t::rts_send || h.type() == msg_type_t::rts_am) {
    rts_t rts;
    std::memcpy(&rts, static_cast<const char*>(data) + sizeof(h), sizeof(rts));
    if (rts.protocol < static_cast<uint32_t>(rdv_protocol_t::write) ||
        rts.protocol > static_cast<uint32_t>(rdv_protocol_t::split))
      return "rendezvous request with an unknown protocol";
    if (rts.frag_size == 0) return "rendezvous request with fragment size 0";
    if (rts.size > kMaxRdvSize)
      return "rendezvous request of an impossible size";
  }
  *hdr = h;
  return nullptr;
}

}  // namespace lci
