// What travels on the wire: every message starts with a 16-byte header.
//
//   tag   (64 bits)  the message's tag
//   rank  (32 bits)  the sender's rank
//   meta  (32 bits)  type (4 bits) | matching policy (4 bits) | aux (24 bits)
//
// aux is the remote completion handle of an active message or a signal, or
// the index of the target matching engine of a send. The rendezvous and RMA
// control messages carry a small payload after the header (below).
#ifndef LCI_CORE_PROTOCOL_HPP
#define LCI_CORE_PROTOCOL_HPP

#include <cstddef>
#include <cstdint>

#include "lci.hpp"

namespace lci
{

enum class msg_type_t : uint32_t {
  send = 1,        // eager send: payload = the data; aux = matching engine
  am = 2,          // eager active message: payload = the data; aux = rcomp
  rts_send = 3,    // rendezvous request to send: rts_t; aux = matching engine
  rts_am = 4,      // rendezvous active message: rts_t; aux = rcomp
  rtr = 5,         // ready to receive: rtr_t
  fin = 6,         // a rendezvous transfer is over: fin_t
  signal = 7,      // a put or get with signal finished: signal_t; aux = rcomp
  put = 8,         // a small put with signal: put_t, then its data (of
                   // put_t::signal.size bytes); aux = rcomp
  put_ack = 9,     // a small put with signal landed (or was refused): put_ack_t
  heartbeat = 10,  // "still here", to a peer on another host (peer_timeout,
                   // core/peer_failure.hpp); no payload
};

struct msg_header_t {
  uint64_t tag;
  int32_t rank;
  uint32_t meta;

  static constexpr uint32_t kAuxMax = (1u << 24) - 1;

  static uint32_t make_meta(msg_type_t type, matching_policy_t policy,
                            uint32_t aux)
  {
    return static_cast<uint32_t>(type) | (static_cast<uint32_t>(policy) << 4) |
           (aux << 8);
  }
  msg_type_t type() const { return static_cast<msg_type_t>(meta & 0xf); }
  matching_policy_t policy() const
  {
    return static_cast<matching_policy_t>((meta >> 4) & 0xf);
  }
  uint32_t aux() const { return meta >> 8; }
};
static_assert(sizeof(msg_header_t) == 16, "the wire header is 16 bytes");

// The rendezvous variants (runtime attribute rdv_protocol):
//   write     RTS -> RTR (receive buffer's key) -> RDMA writes, delivered
//             -> FIN to the receiver
//   writeimm  RTS -> RTR -> RDMA writes with immediate data (the receiver
//             counts the fragments; no FIN)
//   get       RTS (send buffer's key) -> RDMA reads by the receiver -> FIN
//             to the sender
//   split     RTS (send buffer's key) -> RTR (receive buffer's key, the
//             head's size) -> the sender writes the head with immediate
//             data while the receiver reads the tail -> FIN to the sender
//             (its buffer is free) once the receiver's reads are done
enum class rdv_protocol_t : uint32_t {
  write = 1,
  writeimm = 2,
  get = 3,
  split = 4
};

// Request to send: the sender's context, the message size, how it will be
// cut into transfers, the protocol and (get) the send buffer's key.
struct rts_t {
  uint64_t send_ctx;
  uint64_t size;
  uint64_t frag_size;
  uint32_t protocol;  // rdv_protocol_t
  uint32_t reserved;
  // get and split: the send buffer's registration (net::remote_t:
  // rma_base, offset of the buffer in it, key)
  uint64_t rbase;
  uint64_t rdisp;
  uint64_t rkey;
};

// Ready to receive: where the sender writes, and how much.
struct rtr_t {
  uint64_t send_ctx;
  uint32_t recv_ctx;
  uint32_t reserved;
  // the receive buffer's registration (net::remote_t)
  uint64_t rbase;
  uint64_t rdisp;
  uint64_t rkey;
  // split: the bytes the sender writes from the start of the message (the
  // receiver reads the rest); the whole message otherwise
  uint64_t head;
};

// A context (of the receiver for write, of the sender for get) is complete,
// or (split) the receiver has finished reading the sender's buffer;
// or, with `rejected`, the receiver refused the message and the sender's
// context is over: its receive buffer holds only rejected - 1 bytes, or
// (kRejectNoRcomp) the active message's remote completion is not registered.
struct fin_t {
  uint64_t ctx;
  uint64_t rejected;
  static constexpr uint64_t kRejectNoRcomp = ~uint64_t(0);
};

// A put or get with signal is over: which bytes of which region (the target
// resolves rkey to its registration to report the address).
struct signal_t {
  uint64_t rkey;
  uint64_t disp;  // offset in the region
  uint64_t size;
};

// A small put with signal in one message (msg_type_t::put): the signal, the
// initiator's operation (its id in the runtime's rma_ops, echoed by the
// target's put_ack once the data has landed: the put's local completion),
// then the data.
struct put_t {
  signal_t signal;
  uint64_t ctx;
};

// The target's answer to a small put with signal: its data landed and the
// signal was signalled, or (refused != 0) the target could not take it (its
// remote completion or region is not registered there: a fatal error at
// the target, reported to the initiator this way).
struct put_ack_t {
  uint64_t ctx;
  uint64_t refused;
};

// The inject protocol copies header and payload into a stack buffer of this
// size, so the inject limit never exceeds it.
constexpr size_t kMaxInjectWire = 1024;

// The largest message a rendezvous request may announce (256 TiB, the
// x86-64 user address space): a larger size is a corrupt header.
constexpr uint64_t kMaxRdvSize = uint64_t(1) << 48;

// The checks every received message passes before anything trusts its
// bytes (progress.cpp, deliver; tests/fuzz/fuzz_packet.cpp drives it with
// arbitrary input). Pure: it looks only at the `len` bytes at `data` and
// the number of ranks. On success it copies the header to *hdr and returns
// nullptr; otherwise it returns what is wrong (a static string). What needs
// the receiver's state (is the matching engine, remote completion or
// rendezvous context named by the message live here?) is checked by the
// handlers, which report a fatal_error the same way.
const char* check_message(const void* data, size_t len, int rank_n,
                          msg_header_t* hdr);

// check_message's verdict on the common header, inline: true when `h` is an
// eager send or active message (payload of any size) that check_message
// accepts; false says nothing (ask check_message).
inline bool is_good_data_header(const msg_header_t& h, int rank_n)
{
  const uint32_t type = h.meta & 0xf;
  return (type == static_cast<uint32_t>(msg_type_t::send) ||
          type == static_cast<uint32_t>(msg_type_t::am)) &&
         ((h.meta >> 4) & 0xf) <=
             static_cast<uint32_t>(matching_policy_t::rank_tag) &&
         h.rank >= 0 && h.rank < rank_n;
}

}  // namespace lci

#endif  // LCI_CORE_PROTOCOL_HPP
