// A device (paper 3.2.3): one network device (endpoint + completion queue)
// with the receives pre-posted on it. Threads using different devices never
// share a lock. Allocation is collective: the k-th device of every rank is
// connected to the k-th device of every other rank.
#ifndef LCI_RESOURCE_DEVICE_HPP
#define LCI_RESOURCE_DEVICE_HPP

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "lci.hpp"
#include "net/net.hpp"
#include "resource/am_rdv_gate.hpp"
#include "resource/backlog_queue.hpp"
#include "resource/raw_net.hpp"
#include "util/spinlock.hpp"

namespace lci
{

class runtime_impl_t;
class packet_pool_impl_t;

// A send with comp_semantic network whose completion has not come yet, in
// its device's list (core/send_comp.cpp), so that a peer failure can fail
// it. Unlinked by whichever of the completion and the failure comes first.
struct pending_send_t {
  pending_send_t* prev = nullptr;
  pending_send_t* next = nullptr;
  int rank = -1;
  bool linked = false;  // in the device's pending_sends
  bool failed = false;  // in the device's failed_sends instead
};

class device_impl_t
{
 public:
  // Checks the attributes and takes the pool; no network yet: the core's
  // alloc_device (core/alloc_device.cpp) opens and connects `net`.
  device_impl_t(runtime_impl_t* runtime, packet_pool_impl_t* pool,
                const device_attr_t& attr);
  ~device_impl_t();
  device_impl_t(const device_impl_t&) = delete;
  device_impl_t& operator=(const device_impl_t&) = delete;

  device_attr_t attr;
  runtime_impl_t* runtime;
  packet_pool_impl_t* pool;  // supplies the pre-posted receives
  // ids of the packet pools registered with this device (pool ids are never
  // reused, so a freed pool's id matches nothing); register_packet_pool
  std::mutex pools_mu;
  std::vector<uint64_t> registered_pools;
  net::link_t net;   // the backend endpoint, through its thin layer
  size_t index = 0;  // slot in runtime->devices
  // the runtime's progress attributes, copied here for every poll:
  // attentive_progress, and idle_spins (0, never yield: UINT32_MAX)
  bool attentive = false;
  uint32_t yield_after = UINT32_MAX;
  // posts that must not return retry, retried in order by progress
  backlog_queue_t backlog;
  // the raw network layer's completions (net_post_*, net_poll_cq)
  raw_net_t raw;

  // receives currently pre-posted, and sends whose packet is still in flight
  alignas(64) std::atomic<int64_t> nrecvs_posted{0};
  // receives progress keeps pre-posted: attr.net_max_recvs, or 0 when the
  // backend hands messages over in place (net::link_t::needs_recvs; set
  // at connect)
  int64_t recv_target = 0;
  // the last re-posting of receives found the pool empty (until one fills
  // every slot again): arriving sends that wait unmatched then leave their
  // packet (packet_pool_impl_t::detach)
  std::atomic<bool> recv_starved{false};
  // progress calls while the pool was dry (recv_starved, or the backlog
  // waiting for a packet), busy or not, and how many such calls trigger
  // the next scan for packets held by unexpected messages (progress.cpp
  // progress_starved, release_held_packets; doubled after a scan that
  // found none, so a long wait does not keep scanning; 64 again once not
  // dry)
  std::atomic<uint32_t> starved_steps{0};
  std::atomic<uint32_t> starved_scan_after{64};
  // packets those scans gave back (introspection)
  std::atomic<uint64_t> held_released{0};
  alignas(64) std::atomic<int64_t> nsends_pending{0};
  // puts, gets and rendezvous transfers using this device, not complete yet
  alignas(64) std::atomic<int64_t> nops_pending{0};
  // sends with comp_semantic network in flight (circular list with a
  // sentinel), under pending_lock
  util::spinlock_t pending_lock;
  pending_send_t pending_sends;
  // those a peer failure signalled already, whose completion has not come
  // (it may never: the backend may hold them until the device's end, when
  // release_failed_sends frees them), under pending_lock
  pending_send_t failed_sends;
  // rendezvous active messages being received, and the requests waiting
  // behind max_am_rdv_bytes (core/rendezvous.cpp)
  alignas(64) am_rdv_gate_t am_gate;

  // Nothing this device posted still waits for the network: an empty
  // backlog, no send and no put/get/rendezvous transfer in flight
  // (test_drained). The backlog is read first:
  // a queued send counts in nsends_pending before the backlog says empty.
  // Pre-posted receives and receives in a matching engine wait for peers,
  // not for this device, and do not count.
  bool drained() const
  {
    return backlog.empty() &&
           nsends_pending.load(std::memory_order_acquire) == 0 &&
           nops_pending.load(std::memory_order_acquire) == 0;
  }
};

}  // namespace lci

#endif  // LCI_RESOURCE_DEVICE_HPP
