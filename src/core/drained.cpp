// test_drained / wait_drained: has everything a device posted left it?
#include "core/progress.hpp"
#include "resource/device.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

namespace
{

// The device's own posts have left it (device_impl_t::drained), and the
// backend has nothing left to push for a peer (net::net_device_t::busy: the
// native shm fallback serves a peer's get from this rank's memory only
// while this device is progressed). Once a peer has failed the backend's
// work may never finish (toward the dead peer): only the posts count then.
bool device_drained(device_impl_t* dev)
{
  return dev->drained() &&
         (dev->runtime->nfailed.load(std::memory_order_relaxed) != 0 ||
          !dev->net.busy());
}

}  // namespace

error_t test_drained_x::call_impl(runtime_t runtime, device_t device)
{
  device_impl_t* dev = resolve_device(runtime, device, "test_drained").dev;
  return device_drained(dev) ? errorcode_t::done : errorcode_t::retry;
}

void wait_drained_x::call_impl(runtime_t runtime, device_t device)
{
  device_impl_t* dev = resolve_device(runtime, device, "wait_drained").dev;
  while (!device_drained(dev)) progress_device(dev);
}

}  // namespace lci
