// Protocol messages the library sends on its own (rendezvous RTR and FIN,
// the signal of a put or get): a 16-byte header and a small payload. Sent
// with inject when it fits, else from a packet of the device's pool. When
// the network cannot take the message now, it goes to the device's backlog
// queue, which progress drains: a control message is never refused and never
// spun on (paper 4.1.5: "the progress engine cannot keep retrying").
// Thread safety: any-thread.
#ifndef LCI_CORE_CONTROL_HPP
#define LCI_CORE_CONTROL_HPP

#include <cstddef>

#include "core/protocol.hpp"

namespace lci
{

class device_impl_t;
class packet_pool_impl_t;

// The largest payload of a control message.
constexpr size_t kMaxControlPayload = 64;

// One attempt: done / posted, or the retry code. `pool` (the device's own
// when null) supplies the packet when the message is too large to inject.
error_t try_send_control(device_impl_t* dev, packet_pool_impl_t* pool, int rank,
                         const msg_header_t& hdr, const void* payload,
                         size_t size);
// The same for a message of `hlen` bytes at `head` (starting with its
// header) followed by `blen` at `body`, which must fit one packet of `pool`
// (any size up to that: a small put with signal carries its data so).
error_t try_send_gather(device_impl_t* dev, packet_pool_impl_t* pool, int rank,
                        const void* head, size_t hlen, const void* body,
                        size_t blen);

// Sends now, or queues in the device's backlog; never returns retry.
void send_control(device_impl_t* dev, int rank, const msg_header_t& hdr,
                  const void* payload, size_t size);

}  // namespace lci

#endif  // LCI_CORE_CONTROL_HPP
