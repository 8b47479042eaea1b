// Network context and endpoint handles (resource/endpoint.hpp).
#include "resource/endpoint.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "resource/device.hpp"
#include "resource/globals.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

namespace
{
// The handles of each owner (a runtime or a device), the default one
// first once made.
struct registry_t {
  std::mutex mu;
  std::unordered_map<const void*, std::vector<void*>> by_owner;
};

registry_t& registry()
{
  static registry_t* r = new registry_t;  // used during exit: never freed
  return *r;
}

std::atomic<int> next_uid{0};

net_context_impl_t* live_net_context(net_context_t h, const char* call)
{
  net_context_impl_t* p = util::checked(h.p_impl, call);
  globals::net_contexts().check(p, call, "net context");
  return p;
}

endpoint_impl_t* live_endpoint(endpoint_t h, const char* call)
{
  endpoint_impl_t* p = util::checked(h.p_impl, call);
  globals::endpoints().check(p, call, "endpoint");
  return p;
}

const net::caps_t& caps_of(net_context_t h, const char* call)
{
  return live_net_context(h, call)->runtime->net_context->caps();
}
}  // namespace

device_t endpoint_device(endpoint_t endpoint, device_t device, const char* call)
{
  if (endpoint.is_empty()) return device;
  endpoint_impl_t* ep = live_endpoint(endpoint, call);
  if (!device.is_empty() && device.p_impl != ep->device)
    util::throw_fatal(call, ": endpoint ", static_cast<void*>(ep),
                      " is of device ", static_cast<void*>(ep->device),
                      ", not of the device given, ",
                      static_cast<void*>(device.p_impl));
  return device_t(ep->device);
}

namespace
{
// A new handle of `owner`, live from now on (the default one first in the
// owner's list). With `only_default`: the owner's default handle, made at
// the first call.
template <typename T>
T* add_handle(const void* owner, T proto, util::live_set_t& live,
              bool only_default = false)
{
  std::lock_guard<std::mutex> g(registry().mu);
  std::vector<void*>& list = registry().by_owner[owner];
  if (only_default && !list.empty() && static_cast<T*>(list[0])->is_default)
    return static_cast<T*>(list[0]);
  T* p = new T(proto);
  p->is_default = only_default;
  list.insert(only_default ? list.begin() : list.end(), p);
  live.add(p);
  return p;
}

// Frees a handle of alloc_*; the default one goes with its owner.
template <typename T>
void free_handle(T* p, const void* owner, util::live_set_t& live,
                 const char* call, const char* what)
{
  if (p->is_default)
    util::throw_fatal(
        call, ": the default ", what, " goes with its ",
        std::strcmp(what, "endpoint") == 0 ? "device" : "runtime");
  std::lock_guard<std::mutex> g(registry().mu);
  live.remove(p, call, what);
  std::vector<void*>& list = registry().by_owner[owner];
  list.erase(std::find(list.begin(), list.end(), p));
  delete p;
}
}  // namespace

net_context_t alloc_net_context_x::call_impl(runtime_t runtime,
                                             const char* name,
                                             void* user_context)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "alloc_net_context");
  net_context_attr_t attr{detail::resource_name(name), user_context};
  return net_context_t(add_handle(rt, net_context_impl_t{rt, false, attr},
                                  globals::net_contexts()));
}

net_context_t get_default_net_context_x::call_impl(runtime_t runtime)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "get_default_net_context");
  net_context_attr_t attr{DEFAULT_NAME, nullptr};
  return net_context_t(add_handle(rt, net_context_impl_t{rt, true, attr},
                                  globals::net_contexts(), true));
}

void free_net_context_x::call_impl(net_context_t* net_context, runtime_t)
{
  const char* call = "free_net_context";
  if (!net_context) util::throw_fatal(call, ": null net context pointer");
  net_context_impl_t* p = live_net_context(*net_context, call);
  free_handle(p, p->runtime, globals::net_contexts(), call, "net context");
  net_context->p_impl = nullptr;
}

endpoint_t alloc_endpoint_x::call_impl(device_t device, runtime_t runtime,
                                       const char* name, void* user_context)
{
  device_impl_t* dev = resolve_device(runtime, device, "alloc_endpoint").dev;
  endpoint_attr_t attr{next_uid.fetch_add(1), detail::resource_name(name),
                       user_context};
  return endpoint_t(
      add_handle(dev, endpoint_impl_t{dev, false, attr}, globals::endpoints()));
}

endpoint_t get_default_endpoint_x::call_impl(device_t device, runtime_t runtime)
{
  device_impl_t* dev =
      resolve_device(runtime, device, "get_default_endpoint").dev;
  // (a uid spent on every call: unique all the same)
  endpoint_attr_t attr{next_uid.fetch_add(1), DEFAULT_NAME, nullptr};
  return endpoint_t(add_handle(dev, endpoint_impl_t{dev, true, attr},
                               globals::endpoints(), true));
}

void free_endpoint_x::call_impl(endpoint_t* endpoint, runtime_t)
{
  const char* call = "free_endpoint";
  if (!endpoint) util::throw_fatal(call, ": null endpoint pointer");
  endpoint_impl_t* p = live_endpoint(*endpoint, call);
  free_handle(p, p->device, globals::endpoints(), call, "endpoint");
  endpoint->p_impl = nullptr;
}

void release_net_contexts(runtime_impl_t* rt)
{
  std::lock_guard<std::mutex> g(registry().mu);
  auto it = registry().by_owner.find(rt);
  if (it == registry().by_owner.end()) return;
  for (void* v : it->second) {
    globals::net_contexts().remove(v, "free_runtime", "net context");
    delete static_cast<net_context_impl_t*>(v);
  }
  registry().by_owner.erase(it);
}

void release_endpoints(device_impl_t* dev)
{
  std::lock_guard<std::mutex> g(registry().mu);
  auto it = registry().by_owner.find(dev);
  if (it == registry().by_owner.end()) return;
  for (void* v : it->second) {
    globals::endpoints().remove(v, "free_device", "endpoint");
    delete static_cast<endpoint_impl_t*>(v);
  }
  registry().by_owner.erase(it);
}

std::string net_context_t::get_attr_backend() const
{
  return caps_of(*this, "net_context_t::get_attr_backend").backend;
}

std::string net_context_t::get_attr_ofi_provider_name() const
{
  return caps_of(*this, "net_context_t::get_attr_ofi_provider_name")
      .ofi_provider;
}

size_t net_context_t::get_attr_max_msg_size() const
{
  return caps_of(*this, "net_context_t::get_attr_max_msg_size").max_msg_size;
}

size_t net_context_t::get_attr_max_inject_size() const
{
  return caps_of(*this, "net_context_t::get_attr_max_inject_size")
      .max_inject_size;
}

bool net_context_t::get_attr_support_putimm() const
{
  const net::caps_t& caps =
      caps_of(*this, "net_context_t::get_attr_support_putimm");
  return caps.rma && caps.imm_data_size >= 4;
}

int endpoint_t::get_attr_uid() const
{
  return live_endpoint(*this, "endpoint_t::get_attr_uid")->attr.uid;
}

endpoint_attr_t endpoint_t::get_attr() const
{
  return live_endpoint(*this, "endpoint_t::get_attr")->attr;
}

const char* endpoint_t::get_attr_name() const
{
  return live_endpoint(*this, "endpoint_t::get_attr_name")->attr.name;
}

void* endpoint_t::get_attr_user_context() const
{
  return live_endpoint(*this, "endpoint_t::get_attr_user_context")
      ->attr.user_context;
}

net_context_attr_t net_context_t::get_attr() const
{
  return live_net_context(*this, "net_context_t::get_attr")->attr;
}

const char* net_context_t::get_attr_name() const
{
  return live_net_context(*this, "net_context_t::get_attr_name")->attr.name;
}

void* net_context_t::get_attr_user_context() const
{
  return live_net_context(*this, "net_context_t::get_attr_user_context")
      ->attr.user_context;
}

}  // namespace lci
