// The libfabric backend. A context opens one fabric and one domain (so a
// memory registration is valid on every device of the runtime); a device
// owns an RDM endpoint, a completion queue and an address vector, guarded by
// one try-lock at the granularity of the provider's own lock (paper 4.2.4):
// shm (1.17) locks each endpoint and each cq separately, so every device has
// its own try-lock; tcp (1.17) runs one progress engine per domain under one
// lock taken by all its endpoints and cqs, so all devices of a tcp context
// share one try-lock (a busy one is retry_lock / a skipped poll, never a wait
// inside the provider).
#ifndef LCI_NET_OFI_OFI_HPP
#define LCI_NET_OFI_OFI_HPP

#include <memory>
#include <string>
#include <vector>

#include "net/net.hpp"

namespace lci::net::ofi
{

// Checks of RMA keys at peers on this machine: each context lists its
// registrations in a table in shared memory (net/shm/keys.hpp) that the
// ranks on its machine map read-only, and a write or read to such a rank
// whose key or bytes its table does not list is refused before the
// provider sees it. `on` false (the combining backend, whose node-local
// backend reaches those ranks): no table.
struct key_checks_t {
  bool on = false;
  int rank_me = 0;
  std::vector<std::string> nodes;  // node ids by rank (net/node.hpp)
};

// `other_hosts`: host names of (some of) the job's other machines, empty
// when every rank runs on this one. They decide the provider "auto" (shm
// when empty, else the first of cxi, efa, verbs and tcp that libfabric
// offers) and, for tcp without FI_TCP_IFACE, the network interface: the
// one the kernel routes to the first of them that resolves, else the
// first interface that is up, not loopback and has an IPv4 address.
std::unique_ptr<context_t> alloc_context(
    const runtime_attr_t& attr, const std::vector<std::string>& other_hosts,
    const key_checks_t& checks);

}  // namespace lci::net::ofi

#endif  // LCI_NET_OFI_OFI_HPP
