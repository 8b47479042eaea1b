// The socket backend's entry in the backend registry (net/registry.hpp).
#include "net/node.hpp"
#include "net/registry.hpp"
#include "net/socket/socket.hpp"

namespace lci::net::socket
{
namespace
{

std::unique_ptr<context_t> make(const runtime_attr_t& attr, int rank_me,
                                int rank_n,
                                const std::vector<std::string>& nodes)
{
  return alloc_context(attr, rank_me, rank_n,
                       other_hosts(nodes, nodes[static_cast<size_t>(rank_me)]));
}

}  // namespace

backend_entry_t registry_entry()
{
  return {"socket", "native TCP sockets, ranks on any node", "",
          backend_kind_t::network, make};
}

}  // namespace lci::net::socket
