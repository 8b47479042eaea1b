#include "net/net.hpp"

#include <cstring>
#include <vector>

#include "net/hybrid/hybrid.hpp"
#include "net/node.hpp"
#include "net/ofi/ofi.hpp"
#include "net/shm/shm.hpp"
#include "util/error.hpp"

namespace lci::net
{
namespace
{

// The host names of the other machines of the job (a few: the network
// backend looks up the route to them), empty when every rank runs on this
// machine (shm_node_split only pretends).
std::vector<std::string> other_hosts(const std::vector<std::string>& nodes,
                                     const std::string& me)
{
  std::vector<std::string> out;
  const std::string mine = machine_of(me);
  for (const std::string& n : nodes) {
    if (machine_of(n) == mine) continue;
    const std::string h = host_of(n);
    bool seen = false;
    for (const std::string& o : out) seen = seen || o == h;
    if (!seen) out.push_back(h);
    if (out.size() == 4) break;
  }
  return out;
}

// The ofi context for `nodes`: provider auto resolved (shm when every rank
// runs on this machine, else a network provider), told which hosts it
// must reach.
std::unique_ptr<context_t> open_ofi(const runtime_attr_t& attr,
                                    const std::vector<std::string>& nodes,
                                    const std::string& me)
{
  return ofi::alloc_context(attr, other_hosts(nodes, me));
}

// native shm for this node's ranks combined with ofi for the others
std::unique_ptr<context_t> combine(const runtime_attr_t& attr, int rank_me,
                                   const std::vector<std::string>& nodes)
{
  std::vector<int> index(nodes.size(), -1);
  int nlocal = 0;
  for (size_t r = 0; r < nodes.size(); ++r)
    if (nodes[r] == nodes[static_cast<size_t>(rank_me)]) index[r] = nlocal++;
  std::unique_ptr<context_t> remote;
  try {
    remote = open_ofi(attr, nodes, nodes[static_cast<size_t>(rank_me)]);
  } catch (const fatal_error& e) {
    util::throw_fatal("alloc_runtime: backend ", attr.backend, ": ",
                      nodes.size() - static_cast<size_t>(nlocal), " of ",
                      nodes.size(),
                      " ranks run on other nodes and need the network "
                      "backend (ofi), which cannot be opened: ",
                      e.what());
  }
  auto local = shm::alloc_context(attr, index[static_cast<size_t>(rank_me)],
                                  nlocal, nodes[static_cast<size_t>(rank_me)]);
  return hybrid::alloc_context(std::move(local), std::move(remote),
                               std::move(index));
}

}  // namespace

std::unique_ptr<context_t> alloc_context(const runtime_attr_t& attr,
                                         int rank_me, int rank_n,
                                         const std::vector<std::string>& nodes)
{
  if (static_cast<int>(nodes.size()) != rank_n || rank_me < 0 ||
      rank_me >= rank_n)
    util::throw_fatal("alloc_runtime: ", nodes.size(), " node ids for ", rank_n,
                      " ranks");
  const std::string& me = nodes[static_cast<size_t>(rank_me)];
  if (attr.backend == "ofi") return open_ofi(attr, nodes, me);
  if (attr.backend == "shm")
    return shm::alloc_context(attr, rank_me, rank_n, me);
  if (attr.backend == "hybrid") return combine(attr, rank_me, nodes);
  if (attr.backend == "auto") {
    for (const std::string& n : nodes)
      if (n != me) return combine(attr, rank_me, nodes);
    // every rank on this node: no network backend needed
    return shm::alloc_context(attr, rank_me, rank_n, me);
  }
  util::throw_fatal("alloc_runtime: unknown network backend '", attr.backend,
                    "'");
}

}  // namespace lci::net
