// The native inter-node backend (runtime attribute backend = "socket", and
// the remote route of the hybrid backend): TCP sockets, no libfabric. A
// device holds one nonblocking connection per peer rank, made at connect
// (the lower rank of each pair connects to the higher one's listening
// socket, whose address is the device's address); messages and emulated
// RMA travel as frames (wire.hpp); registrations live in the context's key
// table (keys.hpp), checked at the target for every write and read. See
// docs/ARCHITECTURE.md "The socket backend" and device.hpp.
#ifndef LCI_NET_SOCKET_SOCKET_HPP
#define LCI_NET_SOCKET_SOCKET_HPP

#include <memory>
#include <string>
#include <vector>

#include "net/net.hpp"

namespace lci::net::socket
{

// `rank_me` of `rank_n`; `other_hosts`: host names of (some of) the job's
// other machines, empty when every rank runs on this one. They decide the
// address the devices listen on: the loopback address when empty, else the
// local address of the interface the kernel routes to the first of them
// that resolves (the environment variable LCI_SOCKET_ADDR, an IPv4
// address of this host, overrides both).
std::unique_ptr<context_t> alloc_context(
    const runtime_attr_t& attr, int rank_me, int rank_n,
    const std::vector<std::string>& other_hosts);

// The local IPv4 address (dotted) the kernel would use to reach one of
// `hosts` (addr.cpp); empty when none resolves.
std::string route_address(const std::vector<std::string>& hosts);

}  // namespace lci::net::socket

#endif  // LCI_NET_SOCKET_SOCKET_HPP
