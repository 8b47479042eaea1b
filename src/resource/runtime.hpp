// A runtime (paper 3.2.2): the bootstrap connection, one network context, the
// registries that peers address by number (remote completions, matching
// engines) and the default resources. Several runtimes may coexist; each is
// allocated collectively, in the same order on every rank.
#ifndef LCI_RESOURCE_RUNTIME_HPP
#define LCI_RESOURCE_RUNTIME_HPP

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "lci.hpp"
#include "net/net.hpp"
#include "resource/device.hpp"
#include "resource/globals.hpp"
#include "resource/mr.hpp"
#include "util/id_table.hpp"
#include "util/mpmc_array.hpp"

namespace lci::coll
{
class team_base_t;
}

namespace lci
{

class device_impl_t;
class packet_pool_impl_t;
class matching_engine_impl_t;
class rdv_ctx_t;
class mr_impl_t;
class transfer_op_t;
struct packet_t;

// What a rank told the others about its process at alloc_runtime, for the
// liveness check of peer failure detection (core/peer_failure.hpp).
struct peer_info_t {
  int64_t pid = 0;
  uint64_t start_time = 0;  // /proc/<pid>/stat field 22 (clock ticks)
  bool same_host = false;   // same host name and pid namespace as this rank
  bool remote = false;      // another rank, not same_host: watched by
                            // heartbeats (peer_timeout)
};

// Made empty (the attributes as requested); alloc_runtime
// (core/alloc_runtime.cpp) sets it up.
class runtime_impl_t
{
 public:
  explicit runtime_impl_t(const runtime_attr_t& attr);
  ~runtime_impl_t();
  runtime_impl_t(const runtime_impl_t&) = delete;
  runtime_impl_t& operator=(const runtime_impl_t&) = delete;

  runtime_attr_t attr;
  std::shared_ptr<bootstrap::backend_t> bootstrap;
  // serializes this process's bootstrap exchanges (device allocation and
  // free); ordering them across ranks stays the caller's duty
  std::mutex collective_mu;
  // free_runtime has synchronized every rank over the network (the
  // bootstrap is no longer usable): its device frees skip their barrier.
  bool peers_synced_at_free = false;
  int rank_me = 0;
  int rank_n = 1;
  std::unique_ptr<net::context_t> net_context;
  // largest wire message (header included) sent with fi_inject
  size_t max_inject_wire = 0;
  // a value every rank of this runtime shares and other runtimes (very
  // likely) do not: carried by rmrs so that one of another runtime is
  // rejected
  uint32_t tag = 0;
  // rendezvous protocol in force (attr.rdv_protocol resolved), and the
  // largest single RDMA transfer (attr.max_msg_size resolved)
  uint32_t rdv_protocol = 0;  // rdv_protocol_t
  // auto_select: a rendezvous on a route where both ends copy directly
  // (net::link_t::direct_min) uses split, or get when too small to split,
  // instead of rdv_protocol
  bool rdv_split = false;
  // bytes of split rendezvous this process read as receiver and wrote as
  // sender, and of get rendezvous it read as receiver (introspect::counts_t)
  std::atomic<uint64_t> rdv_split_read{0};
  std::atomic<uint64_t> rdv_split_written{0};
  std::atomic<uint64_t> rdv_get_read{0};
  size_t max_rma_size = 0;

  // regions registered by the user (register_memory)
  mr_registry_t mrs;
  // rendezvous transfers in flight, by the id peers use to name them
  util::id_table_t<rdv_ctx_t> rdv_ctxs;
  // puts and gets in flight (found by their target on a peer failure)
  util::id_table_t<transfer_op_t> rma_ops;

  // Peer failure (core/peer_failure.hpp). peer_state[r]: 0 alive, else
  // failed (kPeerFailed*: whether progress is to report it). nfailed > 0
  // is the one relaxed load the fast paths pay.
  std::vector<peer_info_t> peers;
  std::unique_ptr<std::atomic<uint8_t>[]> peer_state;
  alignas(64) std::atomic<int> nfailed{0};
  std::atomic<int> nunreported{0};
  // coarse-clock nanoseconds of the next check; 0 = disabled. The check
  // looks at the same-host processes (when peer_check_interval is not 0;
  // check_local: there are some) and at the silence of the peers on other
  // hosts (watch_remote)
  std::atomic<int64_t> next_peer_check{0};
  int64_t peer_check_ns = 0;
  bool check_local = false;
  // Peers on other hosts (peer_timeout): each check is one epoch;
  // heard[r] is the epoch in which a message from r last arrived (set by
  // the receive path); r is failed after timeout_epochs without one, and
  // a heartbeat goes to each such peer every heartbeat_epochs.
  bool watch_remote = false;
  uint32_t timeout_epochs = 0;
  uint32_t heartbeat_epochs = 0;
  std::atomic<uint32_t> watch_epoch{0};
  std::unique_ptr<std::atomic<uint32_t>[]> heard;
  // serializes failure handling; what failed and why; operations failed by a
  // peer failure whose fragments the network may still complete (deleted
  // with the runtime, after its devices)
  std::mutex peer_mu;
  std::vector<std::string> peer_why;
  std::vector<transfer_op_t*> failed_ops;

  packet_pool_impl_t* default_pool = nullptr;
  matching_engine_impl_t* default_me = nullptr;
  // the engine of collectives that name none (allocated right after
  // default_me, so its index agrees on every rank)
  matching_engine_impl_t* coll_me = nullptr;
  device_impl_t* default_device = nullptr;
  // the node-local collectives' shared segment (coll/shm_team.hpp): null
  // unless every rank runs on this node and attr.coll_shm. Its deleter is
  // set by whoever opens it (core/alloc_runtime.cpp), so that the runtime,
  // a resource, needs only the name of the core's view of the team
  // (core/coll_support.hpp).
  std::unique_ptr<coll::team_base_t, void (*)(coll::team_base_t*)> coll_team{
      nullptr, nullptr};
  // where active-message buffers come from (set_allocator); null: the
  // default allocator, malloc and free, called directly
  std::atomic<allocator_base_t*> allocator{nullptr};

  // remote completions by rcomp_t; matching engines by their index
  util::mpmc_array_t<comp_impl_t*> rcomps;
  util::mpmc_array_t<matching_engine_impl_t*> matching_engines;
  // Sends that arrived for an engine this rank has not allocated yet (the
  // peer allocated its k-th engine first), oldest first, by engine index;
  // alloc_matching_engine hands them to the new engine. Under early_mu.
  std::mutex early_mu;
  std::vector<std::pair<uint32_t, packet_t*>> early_sends;
  // every live device, for attentive progress; a slot is cleared when its
  // device is freed, and free waits until no attentive poller is inside
  util::mpmc_array_t<device_impl_t*> devices;
  alignas(64) std::atomic<int> attentive_pollers{0};
};

// The default allocator of active-message buffers: std::malloc and
// std::free (what get_allocator returns while none is set).
allocator_base_t* default_allocator();

// The allocator in force for an active message arriving now (never null).
inline allocator_base_t* am_allocator(runtime_impl_t* rt)
{
  allocator_base_t* a = rt->allocator.load(std::memory_order_acquire);
  return a ? a : default_allocator();
}

// The runtime a call uses: the given one, else the global one; throws when
// there is none, or when the given one is not live (freed: a use after
// free_runtime / g_runtime_fina), naming `call`.
runtime_impl_t* resolve_runtime(runtime_t runtime, const char* call);

// Handle checks of the calls that take optional resources (src/resource/
// handles.cpp). Each throws fatal_error naming `call` when the handle was
// never allocated by this library or was freed (the live sets of
// resource/globals.hpp, lock-free lookups) or belongs to another runtime.
//
// The runtime and device of a call: the device given (its own runtime when
// no runtime is given; the runtime given must be the device's), else the
// runtime's default device.
struct rt_dev_t {
  runtime_impl_t* rt;
  device_impl_t* dev;
};
// Inline: a device alone that this thread checked last (the live set's
// per-thread cache, nothing freed since) costs a few loads and compares;
// anything else takes resolve_device_slow, which checks everything.
rt_dev_t resolve_device_slow(runtime_t runtime, device_t device,
                             const char* call);
inline rt_dev_t resolve_device(runtime_t runtime, device_t device,
                               const char* call)
{
  device_impl_t* dev = device.p_impl;
  util::live_set_t* devices = globals::devices_if_made();
  if (__builtin_expect(dev != nullptr && runtime.p_impl == nullptr &&
                           devices != nullptr && devices->cached(dev),
                       1))
    return {dev->runtime, dev};
  return resolve_device_slow(runtime, device, call);
}
// A given packet pool, matching engine or registration; the empty handle
// passes as nullptr.
// (The empty handle, the common case, costs no call.)
packet_pool_impl_t* checked_given_pool(packet_pool_t pool, const char* call);
matching_engine_impl_t* checked_given_engine(matching_engine_t me,
                                             runtime_impl_t* rt,
                                             const char* call);
mr_impl_t* checked_given_mr(mr_t mr, runtime_impl_t* rt, const char* call);
inline packet_pool_impl_t* checked_pool(packet_pool_t pool, const char* call)
{
  return pool.p_impl ? checked_given_pool(pool, call) : nullptr;
}
inline matching_engine_impl_t* checked_engine(matching_engine_t me,
                                              runtime_impl_t* rt,
                                              const char* call)
{
  return me.p_impl ? checked_given_engine(me, rt, call) : nullptr;
}
// MR_HOST and MR_UNKNOWN pass as nullptr (host memory); MR_DEVICE is
// refused.
inline mr_impl_t* checked_mr(mr_t mr, runtime_impl_t* rt, const char* call)
{
  return mr.p_impl ? checked_given_mr(mr, rt, call) : nullptr;
}

}  // namespace lci

#endif  // LCI_RESOURCE_RUNTIME_HPP
