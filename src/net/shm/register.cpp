// The native shm backend's entry in the backend registry (net/registry.hpp).
#include "net/registry.hpp"
#include "net/shm/shm.hpp"

namespace lci::net::shm
{
namespace
{

// every rank the job has, on this node (the backend refuses a peer on
// another node at connect)
std::unique_ptr<context_t> make(const runtime_attr_t& attr, int rank_me,
                                int rank_n,
                                const std::vector<std::string>& nodes)
{
  return alloc_context(attr, rank_me, rank_n,
                       nodes[static_cast<size_t>(rank_me)]);
}

}  // namespace

backend_entry_t registry_entry()
{
  return {"shm", "native shared memory, every rank on this node", "",
          backend_kind_t::node_local, make};
}

}  // namespace lci::net::shm
