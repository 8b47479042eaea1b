// The ibv backend's entry in the backend registry (net/registry.hpp);
// built with the rest of net/ibv when LCI_WITH_IBV finds libibverbs.
#include "net/ibv/ibv.hpp"
#include "net/registry.hpp"

namespace lci::net::ibv
{
namespace
{

std::unique_ptr<context_t> make(const runtime_attr_t& attr, int rank_me,
                                int rank_n, const std::vector<std::string>&)
{
  return alloc_context(attr, rank_me, rank_n);
}

}  // namespace

backend_entry_t registry_entry()
{
  return {"ibv",
          "InfiniBand / RoCE: RC queue pairs, ranks on any node (needs an "
          "RDMA device with an active port)",
          "libibverbs", backend_kind_t::network, make};
}

}  // namespace lci::net::ibv
