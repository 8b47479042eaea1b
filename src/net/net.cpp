#include "net/net.hpp"

#include "net/ofi/ofi.hpp"
#include "util/error.hpp"

namespace lci::net
{

std::unique_ptr<context_t> alloc_context(const runtime_attr_t& attr)
{
  if (attr.backend == "ofi") return ofi::alloc_context(attr);
  util::throw_fatal("alloc_runtime: unknown network backend '", attr.backend,
                    "'");
}

}  // namespace lci::net
