// Fixed-size buffers for the inject and eager protocols (paper 4.1.2).
// Every packet remembers its pool, so whoever finishes with it (a send
// completion, the progress engine after delivering it) returns it to the
// right place. get() never blocks: nullptr means "empty, retry later".
//
// Design (paper 4.1.2): a collection of per-thread double-ended queues of
// free packets (util::locked_deque_t), each behind its own spinlock, listed
// in an MPMC array (a thread registers its deque with a locked append;
// thieves read the list lock-free). Deque 0 is the pool's shared deque: it
// starts with every packet and takes the overflow of the others.
//
// - get(): pop at the tail of the calling thread's deque. When it is empty,
//   one steal attempt: half of the shared deque's packets if it has any,
//   else half of the packets of the first non-empty deque found scanning
//   the list from a random start, taken from its head (the cold end).
//   Deques owned by threads are only try-locked (a busy one is skipped);
//   the shared deque is waited for, like one's own deque: their critical
//   sections are short and whoever holds the shared deque waits for
//   nothing. nullptr when the attempt finds no
//   packet (post_comm then returns retry_nopacket); get() never waits for
//   a put.
// - put(p): push at the tail of the calling thread's deque for p's pool,
//   whichever thread got the packet. If that deque then holds more than
//   threshold() = max(32, npackets / live threads) packets, its oldest
//   packets go to the shared deque until half the threshold remain, so the
//   packets a consumer thread frees (send completions on the progress
//   thread) flow back to the producers instead of piling up: after a put,
//   the thread's deque never holds more than the threshold. With one live
//   thread the threshold is npackets: it never triggers.
// - The calling thread's deque is found through a thread_local table of 8
//   slots indexed by the pool's id (ids come from a 64-bit counter and are
//   never reused, so several pools and runtimes work at once and a slot of a
//   destroyed pool never matches); on a miss, the thread's list of its
//   registrations; then registration (adopting a deque left by an exited
//   thread, else a new one sized for all packets: 8 * npackets bytes, 32 KiB
//   for the default pool). Only this first use by a thread allocates;
//   steady-state get/put never do. "Live threads" in the threshold are the
//   threads registered with the pool and not exited.
// - Thread exit: a thread_local destructor gives every packet of the
//   thread's deques (of pools still alive) to the shared deque and marks the
//   deque free for adoption by the next new thread, so nothing is stranded
//   and the deque list stays as long as the peak number of threads (a live
//   but idle thread's deque simply stays a steal victim). A thread
//   that calls get/put after its thread_local destructors ran (or whose
//   registration could not allocate) uses the shared deque directly.
// - count_free(): sum of the deque sizes; exact when no thread is inside
//   get/put, a recent value otherwise.
//
// Thread safety: any-thread. Lock order: a thread acquires at most one
// deque lock by waiting (its own, or the shared deque's when it has none),
// then may wait for the shared deque only while holding its own, and only
// try-locks anything else; nobody waits while holding the shared deque.
#ifndef LCI_RESOURCE_PACKET_POOL_HPP
#define LCI_RESOURCE_PACKET_POOL_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "lci.hpp"
#include "util/mpmc_array.hpp"
#include "util/spinlock.hpp"

namespace lci
{

class packet_pool_impl_t;

// A pointer field with relaxed atomic loads and stores (plain moves on x86)
// that reads and assigns like a plain pointer. packet_t::recv_owner is one:
// reclaim_recvs scans every packet of the pool while the progress threads of
// other devices set and clear it on theirs.
template <typename T>
class relaxed_ptr_t
{
 public:
  relaxed_ptr_t() = default;
  relaxed_ptr_t(const relaxed_ptr_t&) = delete;
  relaxed_ptr_t& operator=(const relaxed_ptr_t&) = delete;
  relaxed_ptr_t& operator=(T* p)
  {
    v_.store(p, std::memory_order_relaxed);
    return *this;
  }
  operator T*() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<T*> v_{nullptr};
};

// The packet's local bookkeeping sits in front of its data; only data
// travels on the wire.
struct alignas(64) packet_t {
  packet_pool_impl_t* pool;
  // the device whose pre-posted receive holds this packet, else nullptr; lets
  // free_device give back the packets of receives that never completed
  relaxed_ptr_t<void> recv_owner;
  // payload bytes of the message held (an unexpected send)
  size_t length;
  // a send in flight with comp_semantic network: the core's record of the
  // completion object to signal at its send completion (else nullptr)
  void* send_comp = nullptr;
  // handed to the user by get_upacket and not yet posted or put back
  std::atomic<bool> user_owned{false};
  // the device the message held arrived on (a rendezvous answers through
  // it); set by the progress engine
  void* arrived_on;
  char* data() { return reinterpret_cast<char*>(this) + sizeof(packet_t); }
  static packet_t* from_data(void* d)
  {
    return reinterpret_cast<packet_t*>(static_cast<char*>(d) -
                                       sizeof(packet_t));
  }
};

static_assert(sizeof(relaxed_ptr_t<void>) == sizeof(void*) &&
                  sizeof(packet_t) == 64,
              "packet_t keeps its layout: 64 bytes of bookkeeping, "
              "then data");

class packet_pool_impl_t
{
 public:
  packet_pool_impl_t(const packet_pool_attr_t& attr);
  ~packet_pool_impl_t();
  packet_pool_impl_t(const packet_pool_impl_t&) = delete;
  packet_pool_impl_t& operator=(const packet_pool_impl_t&) = delete;

  // A free packet, or nullptr after a failed steal attempt. Never blocks.
  packet_t* get();
  // Returns p to its pool (p->pool), into the calling thread's deque.
  static void put(packet_t* p);
  // A heap copy of the first `bytes` of p's data (its pool is nullptr; put
  // frees it), p going back to its pool; p itself if memory is short. For
  // messages that wait unmatched while the pool runs dry.
  static packet_t* detach(packet_t* p, size_t bytes);
  // The heap copy detach makes, p left as it is; nullptr if memory is short.
  static packet_t* heap_copy(packet_t* p, size_t bytes);
  // A heap packet (pool nullptr: put frees it) holding `bytes` bytes of
  // `data`; nullptr if memory is short. Its length and arrived_on are the
  // caller's to set.
  static packet_t* heap_packet(const void* data, size_t bytes);
  // Whether p is one of this pool's packets (not a heap copy).
  bool contains(const packet_t* p) const
  {
    auto addr = reinterpret_cast<uintptr_t>(p);
    auto first = reinterpret_cast<uintptr_t>(slab_);
    return addr >= first && addr < first + stride_ * attr.npackets &&
           (addr - first) % stride_ == 0;
  }

  // The first kHeaderBytes of a packet's data hold the wire header
  // (core/protocol.hpp msg_header_t, whose size core/protocol.cpp checks
  // against this): the pool reserves the room without knowing the header.
  // User packets (get_upacket) hand out the payload after it, so that the
  // packet is sent as it is.
  static constexpr size_t kHeaderBytes = 16;
  // The packet of this pool whose user payload starts exactly at `payload`,
  // else nullptr (two compares for an address outside the pool).
  packet_t* upacket_of(const void* payload) const
  {
    auto addr = reinterpret_cast<uintptr_t>(payload);
    auto first =
        reinterpret_cast<uintptr_t>(slab_) + sizeof(packet_t) + kHeaderBytes;
    if (addr < first || addr >= first + stride_ * attr.npackets) return nullptr;
    uintptr_t off = addr - first;
    if (off % stride_ != 0) return nullptr;
    return reinterpret_cast<packet_t*>(slab_ + off);
  }
  // The same over every live pool (locked scan: put_upacket, not the
  // critical path).
  static packet_t* find_upacket(const void* payload);
  // Gives back every packet held by a receive pre-posted on `owner`.
  void reclaim_recvs(const void* owner);
  size_t count_free() const;
  // Overflow threshold of a deque (see above); for tests and benchmarks.
  size_t threshold() const
  {
    return hot_.threshold.load(std::memory_order_relaxed);
  }
  // Packets in the calling thread's deque (registering it if needed); for
  // tests.
  size_t count_local();
  // Number of deques ever registered, the shared one included.
  size_t count_deques() const
  {
    return ndeques_.load(std::memory_order_acquire);
  }

  // unique over the process's life, never reused
  uint64_t id() const { return hot_.id; }

  packet_pool_attr_t attr;
  // devices whose receives this pool supplies; it cannot be freed before them
  std::atomic<int> users{0};

 private:
  struct deque_t;  // a locked_deque_t of packets + owner bookkeeping
  struct tls_t;    // the per-thread registrations (packet_pool.cpp)

  deque_t* local();
  deque_t* local_slow();
  deque_t* register_thread();
  void release(deque_t* d);
  packet_t* steal_into(deque_t* d);
  void flush(deque_t* d, size_t n);
  void set_threshold_locked();

  // read on every get/put: its own cache line, written only at
  // (un)registration
  struct alignas(64) hot_t {
    uint64_t id = 0;
    deque_t* shared = nullptr;
    std::atomic<size_t> threshold{0};
  } hot_;

  // the deques: index 0 is the shared one; entries [0, ndeques_) are set
  util::mpmc_array_t<deque_t*> deques_;
  std::atomic<size_t> ndeques_{0};

  std::mutex reg_mu_;  // registration, adoption, release
  size_t nlive_ = 0;   // deques owned by a live thread (under reg_mu_)
  std::vector<std::unique_ptr<deque_t>> owned_;  // every deque (under reg_mu_)

  char* slab_ = nullptr;
  size_t stride_ = 0;
  // the slab as announced to the backends (net/regions.hpp): a backend
  // that registers it drops the registration before the slab is freed
  uint64_t region_id_ = 0;
};

}  // namespace lci

#endif  // LCI_RESOURCE_PACKET_POOL_HPP
