// The combining backend (runtime attribute backend = "hybrid", or "auto"
// when the ranks span several nodes): one context and one device over two
// backends, the native shm backend for the ranks on this node and a network
// backend (socket or ofi, attribute net_remote) for the others. Every post goes
// to one of them by its peer rank; poll_comp polls both. See
// docs/ARCHITECTURE.md "The hybrid backend".
#ifndef LCI_NET_HYBRID_HYBRID_HPP
#define LCI_NET_HYBRID_HYBRID_HPP

#include <memory>
#include <vector>

#include "net/net.hpp"

namespace lci::net::hybrid
{

// `local_index[r]`: rank r's index among the ranks of this node (those with
// this rank's node id, numbered in rank order), or -1 for a rank on another
// node. `local` serves the node's ranks under those indices (a native shm
// context made for them), `remote` every rank under its own rank number.
std::unique_ptr<context_t> alloc_context(std::unique_ptr<context_t> local,
                                         std::unique_ptr<context_t> remote,
                                         std::vector<int> local_index);

}  // namespace lci::net::hybrid

#endif  // LCI_NET_HYBRID_HYBRID_HPP
