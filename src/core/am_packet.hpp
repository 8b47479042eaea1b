// Active messages delivered in packets (paper 3.3.1; upstream LCI 2's
// zero_copy_am): the receiving completion object gets the payload in a
// packet of the runtime's pools, a user packet it gives back with
// put_upacket, instead of a copy from the runtime's allocator.
#ifndef LCI_CORE_AM_PACKET_HPP
#define LCI_CORE_AM_PACKET_HPP

#include <cstddef>

#include "core/protocol.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"

namespace lci
{

// An eager active message for `comp` (a zero_copy_am object): `payload`
// (`size` bytes) is in the receive packet `pkt` (which it keeps), or in
// the poller's scratch (pkt null: copied into a packet of the runtime's
// default pool). Signals comp.
void deliver_am_packet(runtime_impl_t* rt, const msg_header_t& hdr,
                       const char* payload, size_t size, packet_t* pkt,
                       comp_impl_t* comp);

}  // namespace lci

#endif  // LCI_CORE_AM_PACKET_HPP
