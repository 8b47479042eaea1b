// test_drained / wait_drained: has everything a device posted left it?
#include "core/progress.hpp"
#include "resource/device.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{
namespace
{

device_impl_t* resolve_device(runtime_t runtime, device_t device,
                              const char* call)
{
  runtime_impl_t* rt = resolve_runtime(runtime, call);
  device_impl_t* dev = device.p_impl ? device.p_impl : rt->default_device;
  if (!dev)
    util::throw_fatal(call, ": no device given and the runtime has none");
  return dev;
}

}  // namespace

error_t test_drained_x::call_impl(runtime_t runtime, device_t device)
{
  device_impl_t* dev = resolve_device(runtime, device, "test_drained");
  return dev->drained() ? errorcode_t::done : errorcode_t::retry;
}

void wait_drained_x::call_impl(runtime_t runtime, device_t device)
{
  device_impl_t* dev = resolve_device(runtime, device, "wait_drained");
  while (!dev->drained()) progress_device(dev);
}

}  // namespace lci
