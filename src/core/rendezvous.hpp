// The rendezvous (zero-copy) protocol of sends and active messages above the
// eager limit (paper 4.3 and 4.4, steps 8 and 10). Four variants, chosen by
// the sender (runtime attribute rdv_protocol) and named in its RTS:
//
//   write     sender: RTS ->                receiver: match, register the
//             buffer, RTR (key) -> sender: RDMA writes, delivery complete
//             -> FIN -> receiver: complete.  Sender complete when its writes
//             are.
//   writeimm  as write, but every write carries the receiver's context id as
//             immediate data; the receiver counts the fragments (it knows
//             their size from the RTS) and completes at the last; no FIN.
//   get       sender: register the buffer, RTS (key) -> receiver: match,
//             RDMA reads -> FIN -> sender: complete.
//   split     sender: register the buffer, RTS (key) -> receiver: match,
//             register the buffer, RTR (key, the head's size), then read
//             the tail -> FIN -> sender: complete once its own writes of
//             the head (with immediate data, as writeimm) are done and the
//             FIN is in. The receiver completes at its last read and the
//             last write of the head, counted as writeimm does. Chosen by
//             auto_select on routes where both ends copy directly
//             (net::link_t::direct_min); the receiver picks the split point
//             (page-aligned in its buffer), or the whole message as head.
//
// An RTS of a send goes through the matching engine like an eager message
// (it may wait there, unexpected, until its receive is posted); the RTS of
// an active message starts the transfer into a buffer from the runtime's
// allocator, at once unless its device is at its bound on active messages
// being received (max_am_rdv_bytes: it then waits in the device's gate).
// Both sides keep a context (rdv_ctx_t) in the runtime's id table; peers
// name it by id. The receiver answers through the device the RTS arrived on,
// which is paired with the sender's device. Every step taken inside progress
// that the network refuses goes to the device's backlog queue.
#ifndef LCI_CORE_RENDEZVOUS_HPP
#define LCI_CORE_RENDEZVOUS_HPP

#include <cstddef>

#include "core/post.hpp"
#include "core/protocol.hpp"

namespace lci
{

class device_impl_t;
struct packet_t;
struct recv_t;

// Sender: registers what the protocol needs and sends the RTS. posted, or a
// retry code (nothing was sent).
status_t post_rdv(const post_args_t& a, comp_impl_t* comp);

// Receiver: an RTS of a send matched `recv` (the receive's fields are copied;
// the caller still owns recv). Starts the transfer, returns the packet to its
// pool and returns posted; throws fatal_error if the message does not fit.
status_t start_rdv_recv(const recv_t* recv, packet_t* pkt);

// Progress: the control messages of the protocol (the packet stays the
// caller's).
void handle_rts_am(device_impl_t* dev, const msg_header_t& hdr,
                   const char* payload, size_t size);
void handle_rtr(device_impl_t* dev, const msg_header_t& hdr,
                const char* payload, size_t size);
void handle_fin(device_impl_t* dev, const msg_header_t& hdr,
                const char* payload, size_t size);
// a write with immediate data landed (writeimm)
void handle_remote_write(device_impl_t* dev, uint64_t imm);

}  // namespace lci

#endif  // LCI_CORE_RENDEZVOUS_HPP
