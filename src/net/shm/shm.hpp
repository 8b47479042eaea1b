// The native shared-memory backend (runtime attribute backend = "shm"): all
// ranks on one node, no libfabric. Each device owns a POSIX shared-memory
// segment holding its inbound traffic: one SPSC ring (ring.hpp) per sender
// rank and a doorbell bitmap; a peer maps the segment at connect and pushes
// messages into its own ring there. RMA copies once with cross-memory attach
// (process_vm_writev / process_vm_readv) when the kernel permits it, else
// twice through the rings. See docs/ARCHITECTURE.md "The native shm
// backend" and the comments in device.hpp; the registration table that
// initiators check before an RMA transfer is keys.hpp.
#ifndef LCI_NET_SHM_SHM_HPP
#define LCI_NET_SHM_SHM_HPP

#include <memory>
#include <string>

#include "net/net.hpp"

namespace lci::net::shm
{

// `rank_me` of `rank_n`: this rank among the ranks the backend serves (all
// of them, or under net/hybrid the ranks of this node, numbered in rank
// order); `node`: net::node_id of this rank, which every peer's must match.
std::unique_ptr<context_t> alloc_context(const runtime_attr_t& attr,
                                         int rank_me, int rank_n,
                                         const std::string& node);

}  // namespace lci::net::shm

#endif  // LCI_NET_SHM_SHM_HPP
