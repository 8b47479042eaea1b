// Sends of a packet and their completion (comp_semantic network, user
// packets): the shared tail of the eager protocol on the posting side and
// the send-completion step of the progress engine.
#ifndef LCI_CORE_SEND_COMP_HPP
#define LCI_CORE_SEND_COMP_HPP

#include "lci.hpp"
#include "resource/device.hpp"
#include "resource/packet_pool.hpp"

namespace lci
{

// Posts the `wire` bytes at p->data() to `rank` on `dev`. With `comp`
// (comp_semantic network) the network is asked for its strongest completion
// level and `comp` is signalled with `status` at the send completion;
// without, the completion only returns the packet. The packet counts in
// dev->nsends_pending until then. done: the backend copied the packet, which
// is back in its pool already. On retry nothing changed: the caller still
// owns `p`.
error_t post_packet(device_impl_t* dev, int rank, packet_t* p, size_t wire,
                    comp_impl_t* comp, const status_t& status);

// The send completion of packet `p` (progress engine): signals the
// completion object attached by post_packet, if any, then returns the packet
// to its pool and counts the send down.
void complete_send(device_impl_t* dev, packet_t* p);

// Peer failure: signals every send of `dev` with comp_semantic network to
// `rank` whose completion has not come (fatal_peer_failure). Their packets
// stay with the network until the completion or the device's end. Returns
// how many it signalled.
size_t fail_network_sends(device_impl_t* dev, int rank);

// The device's end: frees the records of sends a peer failure signalled
// whose completion never came (the backend is closed already).
void release_failed_sends(device_impl_t* dev);

}  // namespace lci

#endif  // LCI_CORE_SEND_COMP_HPP
