// The backends of this build, by name. Each backend registers one factory
// (the context for a runtime's attributes and its ranks' node ids) with a
// kind: node-local (the native shm backend: every rank on one node), network
// (reaches ranks on other nodes: socket, ofi) or combining (hybrid: the
// node-local backend for this node's ranks and a network backend, the
// runtime attribute net_remote, for the others).
// net::alloc_context resolves attr.backend through this table, "auto" by
// where the ranks run, and names the backends built in when a name is not
// there. Which backends a build has is fixed at configure time
// (LCI_WITH_OFI, LCI_WITH_IBV; shm and socket need nothing and are always
// there); registry.cpp lists them (see there for why a list).
#ifndef LCI_NET_REGISTRY_HPP
#define LCI_NET_REGISTRY_HPP

#include <memory>
#include <string>
#include <vector>

#include "net/net.hpp"

namespace lci::net
{

enum class backend_kind_t { node_local, network, combining };

// The context for rank `rank_me` of `rank_n`; nodes[r] is rank r's node id.
using backend_factory_t = std::unique_ptr<context_t> (*)(
    const runtime_attr_t& attr, int rank_me, int rank_n,
    const std::vector<std::string>& nodes);

struct backend_entry_t {
  const char* name;     // the value of the runtime attribute `backend`
  const char* summary;  // one line for lci_info
  // the library the backend runs on and its version ("libfabric 1.17"),
  // empty when it needs none
  const char* library;
  backend_kind_t kind;
  backend_factory_t make;
};

// The backends built in, in registration order (node-local first).
const std::vector<backend_entry_t>& backends();
// The backend registered as `name`, or null.
const backend_entry_t* find_backend(const std::string& name);
// The first backend of kind `kind`, or null.
const backend_entry_t* first_backend(backend_kind_t kind);
// The network backend a combining backend uses for other nodes: ibv when a
// device with an active port opens here, else the first other network
// backend (socket, registered before ofi), else ibv all the same (its
// error then says what is
// missing); null when the build has none. *why (when given) says why ibv
// was passed over, empty when it was not.
const backend_entry_t* network_backend(std::string* why);
// "shm, ofi, hybrid": the names built in, for messages.
std::string backend_names();
// Why a known backend is missing from this build, e.g. "built with
// LCI_WITH_OFI=OFF"; empty for a name no build has.
std::string why_not_built(const std::string& name);

}  // namespace lci::net

#endif  // LCI_NET_REGISTRY_HPP
