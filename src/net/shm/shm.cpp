// The native shared-memory backend's context. See shm.hpp for the
// overview, device.hpp for the device.
#include "net/shm/shm.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>

#include "net/shm/device.hpp"
#include "net/shm/keys.hpp"
#include "net/shm/leftovers.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace lci::net::shm
{
namespace
{

class shm_context_t final : public context_t
{
 public:
  shm_context_t(const runtime_attr_t& attr, int rank_me, int rank_n,
                const std::string& node)
  {
    cfg_.rank_me = rank_me;
    cfg_.rank_n = rank_n;
    cfg_.node = node;
    cfg_.use_cma = attr.shm_cma;
    cfg_.cma_min = attr.shm_cma_threshold;
    cfg_.membarrier = attr.shm_membarrier && asym_fence_register();
    // a power of two that holds two of the largest packets
    size_t want = std::max<size_t>(attr.shm_ring_size,
                                   2 * (attr.packet_size + 2 * kSlot));
    // a header word holds lengths below 2^28 (ring.hpp): 128 MiB at most
    constexpr size_t kMaxRing = size_t(1) << 27;
    if (want > kMaxRing)
      util::throw_fatal("alloc_runtime: shm_ring_size ", attr.shm_ring_size,
                        " (with packet_size ", attr.packet_size,
                        ") needs a ring above the native shm backend's "
                        "largest, ",
                        kMaxRing, " bytes");
    size_t ring = 4096;
    while (ring < want) ring *= 2;
    cfg_.ring_bytes = ring;
    caps_.backend = "shm";
    caps_.provider = "shm-native";
    caps_.max_inject_size = ring / 2 - kSlot;
    caps_.max_msg_size = size_t(1) << 30;
    caps_.network_completion = "delivery";
    caps_.rma = true;
    caps_.imm_data_size = 8;
    caps_.mr_local = false;
    caps_.rma_virtual = true;
    if (int n = reclaim_leftovers(kMagic, key_table_t::kMagic))
      LCI_LOG(info, "native shm backend: removed ", n,
              " segments of dead processes from /dev/shm");
    cfg_.keys = std::make_shared<key_table_t>(rank_me, rank_n, nonce());
    // keys of another process or runtime are unlikely to be live here
    next_key_.store(nonce() * 0x9E3779B97F4A7C15ull ^
                    static_cast<uint64_t>(::getpid()) << 40);
  }

  std::unique_ptr<net_device_t> alloc_device(const device_attr_t&) override
  {
    return std::make_unique<shm_device_t>(cfg_);
  }

  // Peers address memory by virtual address (CMA, or the target's own copy
  // in the fallback); the key is a counter, listed in the registration
  // table that the initiators check.
  net_mr_t register_memory(void* buf, size_t size, const char* call) override
  {
    return register_memory_key(
        buf, size, call, next_key_.fetch_add(1, std::memory_order_relaxed));
  }

  net_mr_t register_memory_key(void* buf, size_t size, const char*,
                               uint64_t rkey) override
  {
    net_mr_t out;
    out.handle = buf ? buf : this;
    out.rkey = rkey;
    out.rma_base = reinterpret_cast<uintptr_t>(buf);
    cfg_.keys->add(out.rkey, out.rma_base, size);
    nregistered_.fetch_add(1, std::memory_order_relaxed);
    return out;
  }

  void deregister_memory(net_mr_t* mr) override
  {
    if (mr->handle) {
      cfg_.keys->remove(mr->rkey);
      nregistered_.fetch_sub(1, std::memory_order_relaxed);
    }
    *mr = net_mr_t();
  }

 private:
  config_t cfg_{};
  std::atomic<uint64_t> next_key_{1};
};

}  // namespace

std::unique_ptr<context_t> alloc_context(const runtime_attr_t& attr,
                                         int rank_me, int rank_n,
                                         const std::string& node)
{
  return std::make_unique<shm_context_t>(attr, rank_me, rank_n, node);
}

}  // namespace lci::net::shm
