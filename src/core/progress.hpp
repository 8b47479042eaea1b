// The progress engine (paper 4.4, steps 4-8) and the blocking helpers built
// on it. Thread safety: any-thread; several threads may progress one device.
#ifndef LCI_CORE_PROGRESS_HPP
#define LCI_CORE_PROGRESS_HPP

#include <functional>

#include "lci.hpp"
#include "resource/device.hpp"

namespace lci
{

class sync_impl_t;
class matching_engine_impl_t;
class runtime_impl_t;
struct packet_t;

// An arrived send (its packet) into a matching engine: matched with a
// waiting receive, or left there as an unexpected message.
void deliver_to_engine(matching_engine_impl_t* me, packet_t* pkt);

// Sends that arrived before this rank allocated engine `me` (a peer
// allocated its engine of that index first) go to `me`, oldest first;
// called by alloc_matching_engine once the engine is published.
void adopt_early_sends(runtime_impl_t* rt, matching_engine_impl_t* me);

// Returns the packets of early sends whose engine never came (free_runtime).
void drop_early_sends(runtime_impl_t* rt);

// A received message (its packet, `len` bytes long, pre-posted on `dev`):
// checked (check_message), then delivered: matched, signalled, or handled
// as a rendezvous / RMA control message. Throws fatal_error for a message
// that is malformed or names something not live here; the packet is
// returned to its pool either way (or kept in a matching engine).
void deliver_message(device_impl_t* dev, packet_t* pkt, size_t len);

// The same for a message handed over in place (`len` bytes at `data`,
// valid during the call only: a backend's `message` completion). An eager
// send is copied straight into the receive waiting for it, or into a
// packet (the pool's, else the heap) to wait in the matching engine.
void deliver_in_place(device_impl_t* dev, const char* data, size_t len);

// Poll the device once and react to what completed; keep the receives
// pre-posted. done if anything happened, retry otherwise. A call that finds
// nothing to do also makes this thread's spare active-message buffer when
// the last small active message it delivered took it (progress.cpp).
error_t progress_device(device_impl_t* device);

// Active messages of up to this many bytes delivered with the default
// allocator go into the delivering thread's spare buffer, malloc'd ahead
// of time, when it has one. (24: the usable size of the smallest block of
// common mallocs, glibc's included, so that a spare holds no more memory
// than a malloc of the message's own size would.)
constexpr size_t kAmSpareBytes = 24;

// This thread's spare buffer, or null when it has none (tests).
const void* am_spare_of_this_thread();

// Runs `wait` (a blocking call that does not poll the network, such as a
// bootstrap barrier) on this thread while a helper thread progresses
// `device` (which nothing else polls any more: free_device) and, one at a
// time, the runtime's other devices. A provider with manual progress
// (libfabric tcp) keeps an injected send in its own queue until the sender
// polls again, so a peer still waiting for that message needs this rank to
// go on polling until the peer, too, arrives; the message may be on
// another device, whose owner is blocked here freeing this one.
// Whatever `wait` throws is rethrown once the helper has stopped.
void progress_during(device_impl_t* device, const std::function<void()>& wait);

// Progress `device` until every send packet it has in flight is back.
void drain_device(device_impl_t* device);

// Progress `device` until `sync` is ready; copies its statuses to p_out.
void wait_sync(sync_impl_t* sync, device_impl_t* device, status_t* p_out);

}  // namespace lci

#endif  // LCI_CORE_PROGRESS_HPP
