// Network context and endpoint handles (resource/endpoint.hpp).
#include "resource/endpoint.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
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

namespace
{
// Upstream's settings of a net context as they are in force in the
// runtime's one network context (the backend's limits, the runtime's
// attributes).
net_context_attr_t with_settings(const runtime_impl_t* rt,
                                 net_context_attr_t attr)
{
  const net::caps_t& caps = rt->net_context->caps();
  attr.ofi_provider_name = caps.ofi_provider;
  attr.max_msg_size = caps.max_msg_size;
  attr.max_inject_size = caps.max_inject_size;
  attr.ibv_gid_idx = rt->attr.ibv_gid_idx;
  attr.ibv_force_gid_auto_select = rt->attr.ibv_force_gid_auto_select;
  attr.ibv_odp_strategy = rt->attr.ibv_odp_strategy;
  attr.ibv_prefetch_strategy = rt->attr.ibv_prefetch_strategy;
  attr.support_putimm = caps.rma && caps.imm_data_size >= 4;
  return attr;
}

std::string shown(size_t v) { return std::to_string(v); }
std::string shown(int v) { return std::to_string(v); }
std::string shown(bool v) { return v ? "true" : "false"; }
std::string shown(attr_ibv_odp_strategy_t v)
{
  return get_attr_ibv_odp_strategy_str(v);
}
std::string shown(attr_ibv_prefetch_strategy_t v)
{
  return get_attr_ibv_prefetch_strategy_str(v);
}

// A net context setting given to alloc_net_context must be the one in
// force: this build opens one network context per runtime, whose settings
// are the runtime's.
template <typename T>
void check_setting(const char* attr, const option_t<T>& given, T in_force)
{
  if (!given.is_set() || given.get() == in_force) return;
  util::throw_fatal("alloc_net_context: ", attr, " ", shown(given.get()),
                    " is not the runtime's network context's (", attr, " ",
                    shown(in_force),
                    "): a runtime has one network context here; set the "
                    "runtime attribute ",
                    attr, " (alloc_runtime_x, g_runtime_init_x, LCI_ATTR_*)");
}
}  // namespace

net_context_t alloc_net_context_x::call_impl(
    runtime_t runtime, std::string ofi_provider_name,
    option_t<size_t> max_msg_size, option_t<size_t> max_inject_size,
    option_t<int> ibv_gid_idx, option_t<bool> ibv_force_gid_auto_select,
    option_t<attr_ibv_odp_strategy_t> ibv_odp_strategy,
    option_t<attr_ibv_prefetch_strategy_t> ibv_prefetch_strategy,
    const char* name, void* user_context)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "alloc_net_context");
  net_context_attr_t attr = with_settings(rt, {});
  if (!ofi_provider_name.empty() && ofi_provider_name != attr.ofi_provider_name)
    util::throw_fatal(
        "alloc_net_context: ofi_provider_name ", ofi_provider_name,
        " is not the runtime's network context's (",
        attr.ofi_provider_name.empty()
            ? "backend " + rt->net_context->caps().backend
            : attr.ofi_provider_name,
        "): a runtime has one network context here; set the runtime "
        "attribute ofi_provider_name (alloc_runtime_x, g_runtime_init_x, "
        "LCI_ATTR_OFI_PROVIDER_NAME)");
  check_setting("max_msg_size", max_msg_size, attr.max_msg_size);
  check_setting("max_inject_size", max_inject_size, attr.max_inject_size);
  check_setting("ibv_gid_idx", ibv_gid_idx, attr.ibv_gid_idx);
  check_setting("ibv_force_gid_auto_select", ibv_force_gid_auto_select,
                attr.ibv_force_gid_auto_select);
  check_setting("ibv_odp_strategy", ibv_odp_strategy, attr.ibv_odp_strategy);
  check_setting("ibv_prefetch_strategy", ibv_prefetch_strategy,
                attr.ibv_prefetch_strategy);
  attr.name = detail::resource_name(name);
  attr.user_context = user_context;
  return net_context_t(add_handle(rt, net_context_impl_t{rt, false, attr},
                                  globals::net_contexts()));
}

net_context_t get_default_net_context_x::call_impl(runtime_t runtime)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "get_default_net_context");
  net_context_attr_t attr{};
  attr.name = DEFAULT_NAME;
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
  const net_context_impl_t* p =
      live_net_context(*this, "net_context_t::get_attr");
  return with_settings(p->runtime, p->attr);
}

int net_context_t::get_attr_ibv_gid_idx() const
{
  return live_net_context(*this, "net_context_t::get_attr_ibv_gid_idx")
      ->runtime->attr.ibv_gid_idx;
}

bool net_context_t::get_attr_ibv_force_gid_auto_select() const
{
  return live_net_context(*this,
                          "net_context_t::get_attr_ibv_force_gid_auto_select")
      ->runtime->attr.ibv_force_gid_auto_select;
}

attr_ibv_odp_strategy_t net_context_t::get_attr_ibv_odp_strategy() const
{
  return live_net_context(*this, "net_context_t::get_attr_ibv_odp_strategy")
      ->runtime->attr.ibv_odp_strategy;
}

attr_ibv_prefetch_strategy_t net_context_t::get_attr_ibv_prefetch_strategy()
    const
{
  return live_net_context(*this,
                          "net_context_t::get_attr_ibv_prefetch_strategy")
      ->runtime->attr.ibv_prefetch_strategy;
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
