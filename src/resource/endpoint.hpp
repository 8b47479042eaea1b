// Upstream LCI 2's network contexts and endpoints as handles on what this
// library has: a runtime's one network context (net::context_t) and a
// device's one endpoint (its net::net_device_t). Each handle is owned by its
// runtime or device and freed with it at the latest.
#ifndef LCI_RESOURCE_ENDPOINT_HPP
#define LCI_RESOURCE_ENDPOINT_HPP

#include "lci.hpp"

namespace lci
{

class runtime_impl_t;
class device_impl_t;

class net_context_impl_t
{
 public:
  runtime_impl_t* runtime;
  bool is_default;
  net_context_attr_t attr;  // name, user context
};

class endpoint_impl_t
{
 public:
  device_impl_t* device;
  bool is_default;
  endpoint_attr_t attr;  // uid, name, user context
};

// The device an endpoint handle posts on: `device` unless `endpoint` is
// given; both given must agree. Throws fatal_error naming `call`.
device_t endpoint_device(endpoint_t endpoint, device_t device,
                         const char* call);

// Free the handles of a runtime or device that goes away (its free paths).
void release_net_contexts(runtime_impl_t* rt);
void release_endpoints(device_impl_t* dev);

}  // namespace lci

#endif  // LCI_RESOURCE_ENDPOINT_HPP
