// register_packet_pool / deregister_packet_pool (upstream LCI 2's names).
// Upstream registers a pool's memory with a device's network so that the
// device can send and receive its packets. The backends here move packets
// without a memory registration, so a registration is only a record kept
// by the device (its own pool from allocation on): it checks the handles
// and lets a program's deregistration of a pair it never registered fail
// clearly instead of doing nothing.
#include <algorithm>
#include <mutex>

#include "resource/device.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

namespace
{

struct pool_and_device_t {
  packet_pool_impl_t* pool;
  device_impl_t* dev;
};

// Both handles are required (upstream's are positional) and live; the
// device must be of `runtime` when one is given.
pool_and_device_t checked_pair(packet_pool_t packet_pool, device_t device,
                               runtime_t runtime, const char* call)
{
  if (packet_pool.is_empty())
    util::throw_fatal(call, ": the packet pool is the empty handle");
  if (device.is_empty())
    util::throw_fatal(call, ": the device is the empty handle");
  packet_pool_impl_t* pool = checked_pool(packet_pool, call);
  device_impl_t* dev = resolve_device(runtime, device, call).dev;
  return {pool, dev};
}

}  // namespace

void register_packet_pool_x::call_impl(packet_pool_t packet_pool,
                                       device_t device, runtime_t runtime)
{
  auto pd = checked_pair(packet_pool, device, runtime, "register_packet_pool");
  std::lock_guard<std::mutex> guard(pd.dev->pools_mu);
  auto& ids = pd.dev->registered_pools;
  if (std::find(ids.begin(), ids.end(), pd.pool->id()) == ids.end())
    ids.push_back(pd.pool->id());
}

void deregister_packet_pool_x::call_impl(packet_pool_t packet_pool,
                                         device_t device, runtime_t runtime)
{
  const char* call = "deregister_packet_pool";
  auto pd = checked_pair(packet_pool, device, runtime, call);
  std::lock_guard<std::mutex> guard(pd.dev->pools_mu);
  auto& ids = pd.dev->registered_pools;
  auto it = std::find(ids.begin(), ids.end(), pd.pool->id());
  if (it == ids.end())
    util::throw_fatal(call, ": packet pool ", static_cast<void*>(pd.pool),
                      " is not registered with device ",
                      static_cast<void*>(pd.dev),
                      " (register_packet_pool it first; a device's own pool "
                      "is registered from its allocation until deregistered "
                      "once)");
  ids.erase(it);
}

}  // namespace lci
