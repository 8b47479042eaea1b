#include "net/net.hpp"

#include "net/ofi/ofi.hpp"
#include "net/shm/shm.hpp"
#include "util/error.hpp"

namespace lci::net
{

std::unique_ptr<context_t> alloc_context(const runtime_attr_t& attr,
                                         int rank_me, int rank_n)
{
  if (attr.backend == "ofi") return ofi::alloc_context(attr);
  if (attr.backend == "shm") return shm::alloc_context(attr, rank_me, rank_n);
  util::throw_fatal("alloc_runtime: unknown network backend '", attr.backend,
                    "'");
}

}  // namespace lci::net
