// The combining backend's entry in the backend registry
// (net/registry.hpp): the registry's node-local backend for this node's
// ranks (found by kind), for the others the network backend the runtime
// attribute net_remote names (auto: net::network_backend, ibv when a device
// is up, else socket; libfabric when the user names a provider).
#include "net/hybrid/hybrid.hpp"
#include "net/registry.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace lci::net::hybrid
{
namespace
{

std::unique_ptr<context_t> make(const runtime_attr_t& attr, int rank_me,
                                int rank_n,
                                const std::vector<std::string>& nodes)
{
  const backend_entry_t* local_backend =
      first_backend(backend_kind_t::node_local);
  // net_remote names the route; auto: a libfabric provider named by the
  // user means libfabric, else ibv when a device is up, else socket
  std::string passed_over;
  const backend_entry_t* network = nullptr;
  if (attr.net_remote != "auto") {
    network = find_backend(attr.net_remote);
    if (network && network->kind != backend_kind_t::network)
      util::throw_fatal("alloc_runtime: net_remote '", attr.net_remote,
                        "' is not a network backend (socket, ofi or ibv)");
    if (!network) {
      const std::string why = why_not_built(attr.net_remote);
      util::throw_fatal("alloc_runtime: net_remote '", attr.net_remote,
                        "' is not in this build",
                        why.empty() ? "" : " (" + why + ")",
                        "; built in: ", backend_names());
    }
  } else if (attr.ofi_provider_name != "auto") {
    network = find_backend("ofi");
  }
  if (!network) network = network_backend(&passed_over);
  if (network && !passed_over.empty())
    LCI_LOG(info, "backend ", attr.backend, ": network backend ", network->name,
            " for the other nodes (", passed_over, ")");
  else if (network)
    LCI_LOG(debug, "backend ", attr.backend, ": network backend ",
            network->name, " for the other nodes");
  if (!local_backend || !network)
    util::throw_fatal("alloc_runtime: backend ", attr.backend,
                      " needs a node-local and a network backend; built in: ",
                      backend_names());
  const std::string& me = nodes[static_cast<size_t>(rank_me)];
  std::vector<int> index(nodes.size(), -1);
  int nlocal = 0;
  for (size_t r = 0; r < nodes.size(); ++r)
    if (nodes[r] == me) index[r] = nlocal++;
  std::unique_ptr<context_t> remote;
  try {
    remote = network->make(attr, rank_me, rank_n, nodes);
  } catch (const fatal_error& e) {
    util::throw_fatal("alloc_runtime: backend ", attr.backend, ": ",
                      nodes.size() - static_cast<size_t>(nlocal), " of ",
                      nodes.size(),
                      " ranks run on other nodes and need the network "
                      "backend (",
                      network->name, "), which cannot be opened: ", e.what());
  }
  // the node-local backend sees this node's ranks alone, renumbered
  auto local =
      local_backend->make(attr, index[static_cast<size_t>(rank_me)], nlocal,
                          std::vector<std::string>(nlocal, me));
  return alloc_context(std::move(local), std::move(remote), std::move(index));
}

}  // namespace

backend_entry_t registry_entry()
{
  return {"hybrid",
          "the node-local backend on this node + the network backend for "
          "the others",
          "", backend_kind_t::combining, make};
}

}  // namespace lci::net::hybrid
