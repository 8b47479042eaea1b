// test_drained / wait_drained: has everything a device posted left it?
#include "core/progress.hpp"
#include "resource/device.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

error_t test_drained_x::call_impl(runtime_t runtime, device_t device)
{
  device_impl_t* dev = resolve_device(runtime, device, "test_drained").dev;
  return dev->drained() ? errorcode_t::done : errorcode_t::retry;
}

void wait_drained_x::call_impl(runtime_t runtime, device_t device)
{
  device_impl_t* dev = resolve_device(runtime, device, "wait_drained").dev;
  while (!dev->drained()) progress_device(dev);
}

}  // namespace lci
