// The completion-object operations.
#include "comp/counter.hpp"
#include "comp/cq.hpp"
#include "comp/handler.hpp"
#include "comp/sync.hpp"
#include "core/globals.hpp"
#include "core/progress.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{
namespace
{

comp_t track(comp_impl_t* comp)
{
  globals::comps().add(comp);
  return comp_t(comp);
}

// The built-in object of type T behind `comp`, or a clear error.
template <typename T>
T* as(comp_t comp, const char* call, const char* what)
{
  if (comp.is_empty() || comp == COMP_NULL_RETRY)
    util::throw_fatal(call, ": the completion object is empty");
  T* p = dynamic_cast<T*>(comp.p_impl);
  if (!p)
    util::throw_fatal(call, ": completion object ",
                      static_cast<void*>(comp.p_impl), " is not a ", what);
  return p;
}

}  // namespace

sync_impl_t::sync_impl_t(const sync_attr_t& a)
    : attr(a), statuses_(new status_t[a.threshold > 0 ? a.threshold : 1])
{
  if (attr.threshold < 1)
    util::throw_fatal("alloc_sync: threshold ", attr.threshold,
                      " must be at least 1");
}

comp_t alloc_sync_x::call_impl(runtime_t, const sync_attr_t& attr)
{
  return track(new sync_impl_t(attr));
}

bool sync_test_x::call_impl(comp_t comp, status_t* p_out)
{
  return as<sync_impl_t>(comp, "sync_test", "synchronizer")->test(p_out);
}

void sync_wait_x::call_impl(comp_t comp, status_t* p_out, bool do_progress,
                            device_t device, runtime_t runtime)
{
  sync_impl_t* sync = as<sync_impl_t>(comp, "sync_wait", "synchronizer");
  device_impl_t* dev = nullptr;
  if (do_progress) {
    dev = device.p_impl;
    if (!dev) dev = resolve_runtime(runtime, "sync_wait")->default_device;
  }
  wait_sync(sync, dev, p_out);
}

comp_t alloc_cq_x::call_impl(runtime_t, const cq_attr_t& attr)
{
  return track(new cq_impl_t(attr));
}

status_t cq_pop_x::call_impl(comp_t comp)
{
  return as<cq_impl_t>(comp, "cq_pop", "completion queue")->pop();
}

comp_t alloc_handler_x::call_impl(comp_handler_t handler, runtime_t)
{
  if (!handler) util::throw_fatal("alloc_handler: null handler function");
  return track(new handler_impl_t(handler));
}

comp_t alloc_counter_x::call_impl(runtime_t)
{
  return track(new counter_impl_t());
}

int64_t counter_get_x::call_impl(comp_t comp)
{
  return as<counter_impl_t>(comp, "counter_get", "counter")->get();
}

void counter_set_x::call_impl(comp_t comp, int64_t value)
{
  as<counter_impl_t>(comp, "counter_set", "counter")->set(value);
}

void comp_signal_x::call_impl(comp_t comp, status_t status)
{
  if (comp.is_empty() || comp == COMP_NULL_RETRY)
    util::throw_fatal("comp_signal: the completion object is empty");
  comp.p_impl->signal(status);
}

void free_comp_x::call_impl(comp_t* comp)
{
  const char* call = "free_comp";
  if (!comp) util::throw_fatal(call, ": null completion object pointer");
  comp_impl_t* p = util::checked(comp->p_impl, call);
  if (*comp == COMP_NULL_RETRY)
    util::throw_fatal(call, ": COMP_NULL_RETRY cannot be freed");
  globals::comps().remove(p, call, "completion object");
  delete p;
  comp->p_impl = nullptr;
}

}  // namespace lci
