// The libibverbs backend (runtime attribute backend = "ibv"; the network
// half of hybrid and auto when a device with an active port exists). See
// docs/ARCHITECTURE.md, "The ibv backend": a context opens the device, its
// protection domain and the registration cache; a device holds a completion
// queue, a shared receive queue and one reliable-connected queue pair per
// peer rank. Every verbs call goes through the layer of verbs.hpp.
#ifndef LCI_NET_IBV_IBV_HPP
#define LCI_NET_IBV_IBV_HPP

#include <memory>
#include <string>

#include "net/net.hpp"

namespace lci::net::ibv
{

std::unique_ptr<context_t> alloc_context(const runtime_attr_t& attr,
                                         int rank_me, int rank_n);

// Whether a device with an active port opens in this process (the fake one
// when LCI_IBV_FAKE selects it); else false and *why. Computed once.
bool usable(std::string* why);

}  // namespace lci::net::ibv

#endif  // LCI_NET_IBV_IBV_HPP
