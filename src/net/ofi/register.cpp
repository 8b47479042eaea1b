// The libfabric backend's entry in the backend registry (net/registry.hpp);
// built with the rest of net/ofi when LCI_WITH_OFI finds libfabric.
#include <rdma/fabric.h>

#include "net/node.hpp"
#include "net/ofi/ofi.hpp"
#include "net/registry.hpp"

namespace lci::net::ofi
{
namespace
{

std::unique_ptr<context_t> make(const runtime_attr_t& attr, int rank_me,
                                int /*rank_n*/,
                                const std::vector<std::string>& nodes)
{
  // the combining backend (backend hybrid, or auto across nodes) reaches
  // this node's ranks by its node-local backend, which checks keys itself
  key_checks_t checks;
  checks.on = attr.backend == "ofi";
  checks.rank_me = rank_me;
  checks.nodes = nodes;
  return alloc_context(
      attr, other_hosts(nodes, nodes[static_cast<size_t>(rank_me)]), checks);
}

}  // namespace

backend_entry_t registry_entry()
{
  static const std::string library =
      "libfabric " + std::to_string(FI_MAJOR(fi_version())) + "." +
      std::to_string(FI_MINOR(fi_version()));
  return {"ofi", "provider ofi_provider_name, ranks on any node",
          library.c_str(), backend_kind_t::network, make};
}

}  // namespace lci::net::ofi
