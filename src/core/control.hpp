// Protocol messages the library sends on its own (rendezvous RTR and FIN,
// the signal of a put or get): a 16-byte header and a small payload, sent
// by send_small like every eager message. When
// the network cannot take the message now, it goes to the device's backlog
// queue, which progress drains: a control message is never refused and never
// spun on (paper 4.1.5: "the progress engine cannot keep retrying").
// Thread safety: any-thread.
#ifndef LCI_CORE_CONTROL_HPP
#define LCI_CORE_CONTROL_HPP

#include <cstddef>

#include "core/protocol.hpp"
#include "resource/device.hpp"

namespace lci
{

class device_impl_t;
class packet_pool_impl_t;

// The largest payload of a control message.
constexpr size_t kMaxControlPayload = 64;

// send_small's packet case: the message copied into a packet of `pool`
// (the device's own when null) and posted; the packet goes back to its pool
// at the send's completion. done / posted, or the retry code.
error_t send_in_packet(device_impl_t* dev, packet_pool_impl_t* pool, int rank,
                       const void* head, size_t hlen, const void* body,
                       size_t blen);

// The one small-send path of the library (eager sends and active messages,
// control messages, small puts with signal): a message of `hlen` bytes at
// `head` (starting with its wire header) followed by `blen` at `body`, which
// must fit one packet of `pool`. Within the route's copy limit
// (net::link_t::copy_limit) the backend copies it and it is done on return;
// else it goes through a packet (send_in_packet). Either way both pieces
// are reusable on return. done / posted, or the retry code (nothing sent).
[[gnu::always_inline]] inline error_t send_small(device_impl_t* dev,
                                                 packet_pool_impl_t* pool,
                                                 int rank, const void* head,
                                                 size_t hlen, const void* body,
                                                 size_t blen)
{
  if (hlen + blen <= dev->net.copy_limit(rank))
    return dev->net.send_copy(rank, head, hlen, body, blen);
  return send_in_packet(dev, pool, rank, head, hlen, body, blen);
}

// send_small of a control message: header `hdr`, `size` bytes of payload.
error_t try_send_control(device_impl_t* dev, packet_pool_impl_t* pool, int rank,
                         const msg_header_t& hdr, const void* payload,
                         size_t size);
// Sends now, or queues in the device's backlog; never returns retry.
void send_control(device_impl_t* dev, int rank, const msg_header_t& hdr,
                  const void* payload, size_t size);

}  // namespace lci

#endif  // LCI_CORE_CONTROL_HPP
