// Handle checks shared by the calls that take optional resources
// (runtime.hpp): live (allocated by this library, not freed) and of the
// right runtime.
#include "resource/device.hpp"
#include "resource/globals.hpp"
#include "resource/matching_engine.hpp"
#include "resource/mr.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

runtime_impl_t* resolve_runtime(runtime_t runtime, const char* call)
{
  runtime_impl_t* rt = runtime.p_impl;
  if (rt) {
    globals::runtimes().check(rt, call, "runtime");
    return rt;
  }
  rt = globals::g_runtime().p_impl;
  if (!rt)
    util::throw_fatal(call,
                      ": no runtime (call g_runtime_init() first, or "
                      "pass .runtime())");
  return rt;
}

rt_dev_t resolve_device_slow(runtime_t runtime, device_t device,
                             const char* call)
{
  device_impl_t* dev = device.p_impl;
  if (!dev) {
    runtime_impl_t* rt = resolve_runtime(runtime, call);
    if (!rt->default_device)
      util::throw_fatal(call, ": no device given and the runtime has none");
    return {rt, rt->default_device};
  }
  globals::devices().check(dev, call, "device");
  if (runtime.p_impl && runtime.p_impl != dev->runtime) {
    globals::runtimes().check(runtime.p_impl, call, "runtime");
    util::throw_fatal(call, ": device ", static_cast<void*>(dev),
                      " belongs to another runtime than runtime ",
                      static_cast<void*>(runtime.p_impl));
  }
  return {dev->runtime, dev};
}

packet_pool_impl_t* checked_given_pool(packet_pool_t pool, const char* call)
{
  globals::packet_pools().check(pool.p_impl, call, "packet pool");
  return pool.p_impl;
}

matching_engine_impl_t* checked_given_engine(matching_engine_t me,
                                             runtime_impl_t* rt,
                                             const char* call)
{
  matching_engine_impl_t* m = me.p_impl;
  globals::matching_engines().check(m, call, "matching engine");
  if (rt && m->runtime != rt)
    util::throw_fatal(call, ": matching engine ", static_cast<void*>(m),
                      " belongs to another runtime");
  return m;
}

mr_impl_t* checked_given_mr(mr_t mr, runtime_impl_t* rt, const char* call)
{
  if (mr == MR_UNKNOWN) return nullptr;
  if (mr == MR_DEVICE)
    util::throw_fatal(call,
                      ": MR_DEVICE names accelerator memory, which this "
                      "build of LCI cannot access (no accelerator support)");
  mr_impl_t* p = mr.p_impl;
  globals::mrs().check(p, call, "mr");
  if (rt && p->runtime != rt)
    util::throw_fatal(call, ": mr ", static_cast<void*>(p),
                      " belongs to another runtime");
  return p;
}

}  // namespace lci
