#include "core/am_packet.hpp"

#include <cstring>

#include "util/copy.hpp"
#include "util/error.hpp"

namespace lci
{

void* am_packet(runtime_impl_t* rt, const msg_header_t& hdr,
                const char* payload, size_t size, packet_t* pkt)
{
  constexpr size_t kHead = packet_pool_impl_t::kHeaderBytes;
  char* buf = nullptr;
  if (pkt && pkt->pool && payload == pkt->data() + kHead) {
    // the receive packet itself: its payload is where a user packet's is
    buf = pkt->data() + kHead;
  } else {
    if (pkt) packet_pool_impl_t::put(pkt);
    packet_pool_impl_t* pool = rt->default_pool;
    pkt = pool ? pool->get() : nullptr;
    if (!pkt)
      util::throw_fatal(
          "progress: no free packet in the default packet pool for an "
          "active message to a zero_copy_am completion object (rank ",
          hdr.rank, ", ", size,
          " bytes): give delivered packets back with put_upacket sooner, "
          "or raise npackets");
    if (size + kHead > pool->attr.packet_size) {
      packet_pool_impl_t::put(pkt);
      util::throw_fatal("progress: an active message of ", size,
                        " bytes does not fit a packet of the default pool (",
                        pool->attr.packet_size, " bytes)");
    }
    buf = pkt->data() + kHead;
    util::copy_bytes(buf, payload, size);
  }
  // the receiver's until put_upacket
  pkt->recv_owner = nullptr;
  pkt->user_owned.store(true, std::memory_order_relaxed);
  return buf;
}

}  // namespace lci
