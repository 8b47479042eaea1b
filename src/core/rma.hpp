// RMA (paper Table 1): put and get, with and without signal.
//
//   put             RDMA write(s) of the local buffer into the remote region,
//                   posted with delivery completion: when the local
//                   completion object is signalled, the buffer is reusable
//                   and the data is visible at the target.
//   put with signal the same, then a signal message; the target's remote
//                   completion is signalled (rank, tag, address, size) once
//                   the data has landed. Up to 2 KiB: one message with
//                   signal and data (msg_type_t::put), which
//                   the target lands, signals and acks (put_ack, the
//                   put's completion).
//   get             RDMA read(s) into the local buffer; complete when the
//                   data is there.
//   get with signal the same, then a signal message; when the target's
//                   remote completion is signalled, the initiator has read
//                   the data: the target may overwrite (or deregister) the
//                   region.
//
// A zero-byte put or get moves nothing: done at once (with signal: the signal
// message is sent, and done). Transfers above the runtime's max_rma_size are
// split; an unregistered local buffer is registered on the fly when the
// backend needs it (or the runtime attribute register_local asks for it).
#ifndef LCI_CORE_RMA_HPP
#define LCI_CORE_RMA_HPP

#include <cstddef>

#include "core/post.hpp"
#include "core/protocol.hpp"

namespace lci
{

class device_impl_t;

// Checks the rmr (throws fatal_error), then posts. posted, done (zero
// bytes), or a retry code (nothing was posted).
status_t post_rma(const post_args_t& a, direction_t direction,
                  comp_impl_t* comp);

// Progress: a signal message (the packet stays the caller's).
void handle_signal(device_impl_t* dev, const msg_header_t& hdr,
                   const char* payload, size_t size);
// Progress: a small put with signal (msg_type_t::put): the data is copied
// into the region, the signal is signalled, the initiator gets a put_ack
// (the packet stays the caller's).
void handle_put(device_impl_t* dev, const msg_header_t& hdr,
                const char* payload, size_t size);
// Progress: the ack of a small put with signal: the put is complete.
void handle_put_ack(device_impl_t* dev, const msg_header_t& hdr,
                    const char* payload, size_t size);

}  // namespace lci

#endif  // LCI_CORE_RMA_HPP
