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

// The buffer of an eager active message for a zero_copy_am object: the
// payload (`size` bytes) in a packet, the user's until put_upacket: the
// receive packet `pkt` itself when the payload is in it (it keeps it),
// else a packet of the runtime's default pool holding a copy (pkt, if
// any, goes back). Throws fatal_error when the pool has none free.
void* am_packet(runtime_impl_t* rt, const msg_header_t& hdr,
                const char* payload, size_t size, packet_t* pkt);

}  // namespace lci

#endif  // LCI_CORE_AM_PACKET_HPP
