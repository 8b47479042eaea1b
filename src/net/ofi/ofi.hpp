// The libfabric backend. A context opens one fabric and one domain (so a
// memory registration is valid on every device of the runtime); a device
// owns an RDM endpoint, a completion queue and an address vector, guarded by
// one try-lock, which is the granularity of the providers' own endpoint
// lock (paper 4.2.4).
#ifndef LCI_NET_OFI_OFI_HPP
#define LCI_NET_OFI_OFI_HPP

#include <memory>

#include "net/net.hpp"

namespace lci::net::ofi
{

std::unique_ptr<context_t> alloc_context(const runtime_attr_t& attr);

}  // namespace lci::net::ofi

#endif  // LCI_NET_OFI_OFI_HPP
