#include "resource/packet_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "net/regions.hpp"
#include "resource/globals.hpp"
#include "resource/runtime.hpp"
#include "util/deque.hpp"
#include "util/error.hpp"

// The per-thread slot table is read on every get/put: give it the
// initial-exec TLS model (a fixed offset from the thread pointer, no
// __tls_get_addr call from the shared library). It is 128 bytes, well inside
// the static TLS surplus glibc keeps for libraries loaded with dlopen.
#if defined(__GNUC__) && !defined(__APPLE__)
#define LCI_TLS_INITIAL_EXEC __attribute__((tls_model("initial-exec")))
#else
#define LCI_TLS_INITIAL_EXEC
#endif

namespace lci
{

struct alignas(64) packet_pool_impl_t::deque_t {
  explicit deque_t(size_t capacity, uint64_t seed) : q(capacity), rng(seed) {}
  util::locked_deque_t<packet_t*> q;
  // victim choice of the thread that owns the deque (read and written under
  // q's lock only)
  uint64_t rng;
  // owned by a live thread (under the pool's reg_mu_)
  bool owned = false;
};

namespace
{

constexpr size_t kMinThreshold = 32;
constexpr size_t kSlots = 8;  // power of two

std::atomic<uint64_t> g_next_pool_id{1};  // 0 marks an empty slot

// The pools alive, so that a thread exiting never touches a freed pool.
// Leaked on purpose: threads may exit during static destruction.
struct live_pools_t {
  std::mutex mu;
  std::vector<std::pair<uint64_t, packet_pool_impl_t*>> pools;
  packet_pool_impl_t* find_locked(uint64_t id)
  {
    for (auto& e : pools)
      if (e.first == id) return e.second;
    return nullptr;
  }
};
live_pools_t& live_pools()
{
  static live_pools_t* r = new live_pools_t;
  return *r;
}

inline uint64_t xorshift(uint64_t& s)
{
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

}  // namespace

// The thread_local state. slots: the fast lookup (trivial, so no
// initialization guard on the hot path); regs: every registration of this
// thread, whose destructor runs at thread exit.
struct packet_pool_impl_t::tls_t {
  struct slot_t {
    uint64_t id;
    deque_t* dq;
  };
  struct reg_t {
    uint64_t id;
    packet_pool_impl_t* pool;
    deque_t* dq;
  };
  struct regs_t {
    std::vector<reg_t> v;
    ~regs_t();
  };
  static thread_local slot_t slots[kSlots] LCI_TLS_INITIAL_EXEC;
  static thread_local bool exited;
  static thread_local regs_t regs;
};

thread_local packet_pool_impl_t::tls_t::slot_t
    packet_pool_impl_t::tls_t::slots[kSlots] LCI_TLS_INITIAL_EXEC = {};
thread_local bool packet_pool_impl_t::tls_t::exited = false;
thread_local packet_pool_impl_t::tls_t::regs_t packet_pool_impl_t::tls_t::regs;

packet_pool_impl_t::tls_t::regs_t::~regs_t()
{
  exited = true;
  for (auto& s : slots) s = slot_t{0, nullptr};
  live_pools_t& lp = live_pools();
  std::lock_guard<std::mutex> g(lp.mu);
  for (const reg_t& r : v)
    if (packet_pool_impl_t* pool = lp.find_locked(r.id)) pool->release(r.dq);
}

namespace
{
// The slab of a large pool is 2 MiB-aligned and asks for transparent huge
// pages: constructing the packets touches every packet's first page, and
// with 4 KiB pages that is one page fault per packet, which dominates the
// start-up of a runtime. Where THP is off, madvise fails harmlessly and the
// pool uses small pages.
constexpr size_t kHugePage = size_t(2) << 20;

char* alloc_slab(size_t bytes)
{
  if (bytes < kHugePage)
    return static_cast<char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
  size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
#ifdef MADV_HUGEPAGE
  if (p) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return static_cast<char*>(p);
}
}  // namespace

packet_pool_impl_t::packet_pool_impl_t(const packet_pool_attr_t& a) : attr(a)
{
  if (attr.packet_size <= kHeaderBytes || attr.packet_size % 8 != 0)
    util::throw_fatal("alloc_packet_pool: packet_size ", attr.packet_size,
                      " must be a multiple of 8 larger than the ", kHeaderBytes,
                      "-byte message header");
  if (attr.npackets == 0)
    util::throw_fatal("alloc_packet_pool: npackets must be positive");
  // (the per-packet bookkeeping also scales with the count: bound both)
  if (attr.packet_size > (size_t(1) << 40) ||
      attr.npackets > (size_t(1) << 32) ||
      (attr.packet_size + sizeof(packet_t) + 63) / 64 * 64 >
          (size_t(1) << 46) / attr.npackets)
    util::throw_fatal("alloc_packet_pool: ", attr.npackets, " packets of ",
                      attr.packet_size,
                      " bytes exceed any memory (npackets at most 2^32, the "
                      "pool at most 64 TiB)");
  size_t stride = sizeof(packet_t) + attr.packet_size;
  stride = (stride + 63) / 64 * 64;
  stride_ = stride;
  slab_ = alloc_slab(stride * attr.npackets);
  if (!slab_)
    util::throw_fatal("alloc_packet_pool: cannot allocate ", attr.npackets,
                      " packets of ", attr.packet_size, " bytes");
  hot_.id = g_next_pool_id.fetch_add(1, std::memory_order_relaxed);
  try {
    auto first = std::make_unique<deque_t>(attr.npackets, hot_.id);
    owned_.reserve(8);
    deque_t* shared = first.get();
    owned_.push_back(std::move(first));
    hot_.shared = shared;
    for (size_t i = 0; i < attr.npackets; ++i) {
      auto* p = new (slab_ + i * stride) packet_t;
      p->pool = this;
      p->recv_owner = nullptr;
      p->length = 0;
      shared->q.push_tail(p);
    }
    deques_.push_back(shared);
    ndeques_.store(1, std::memory_order_release);
    set_threshold_locked();
    region_id_ = net::announce_region(slab_, stride * attr.npackets);
    live_pools_t& lp = live_pools();
    std::lock_guard<std::mutex> g(lp.mu);
    lp.pools.emplace_back(hot_.id, this);
  } catch (...) {
    if (region_id_) net::retire_region(region_id_);
    std::free(slab_);
    throw;
  }
}

packet_t* packet_pool_impl_t::find_upacket(const void* payload)
{
  live_pools_t& lp = live_pools();
  std::lock_guard<std::mutex> g(lp.mu);
  for (auto& e : lp.pools)
    if (packet_t* p = e.second->upacket_of(payload)) return p;
  return nullptr;
}

packet_pool_impl_t::~packet_pool_impl_t()
{
  {
    live_pools_t& lp = live_pools();
    std::lock_guard<std::mutex> g(lp.mu);
    auto it = std::find_if(lp.pools.begin(), lp.pools.end(),
                           [&](const auto& e) { return e.first == hot_.id; });
    if (it != lp.pools.end()) lp.pools.erase(it);
  }
  net::retire_region(region_id_);
  std::free(slab_);
}

void packet_pool_impl_t::set_threshold_locked()
{
  size_t live = nlive_ > 0 ? nlive_ : 1;
  hot_.threshold.store(std::max(kMinThreshold, attr.npackets / live),
                       std::memory_order_relaxed);
}

inline packet_pool_impl_t::deque_t* packet_pool_impl_t::local()
{
  const tls_t::slot_t& s = tls_t::slots[hot_.id & (kSlots - 1)];
  if (__builtin_expect(s.id == hot_.id, 1)) return s.dq;
  return local_slow();
}

packet_pool_impl_t::deque_t* packet_pool_impl_t::local_slow()
{
  if (tls_t::exited) return hot_.shared;
  deque_t* d = nullptr;
  for (const tls_t::reg_t& r : tls_t::regs.v)
    if (r.id == hot_.id) d = r.dq;
  if (!d) d = register_thread();
  if (d != hot_.shared) tls_t::slots[hot_.id & (kSlots - 1)] = {hot_.id, d};
  return d;
}

packet_pool_impl_t::deque_t* packet_pool_impl_t::register_thread()
{
  std::vector<tls_t::reg_t>& regs = tls_t::regs.v;
  try {
    // forget the registrations of pools destroyed since
    {
      live_pools_t& lp = live_pools();
      std::lock_guard<std::mutex> g(lp.mu);
      regs.erase(std::remove_if(regs.begin(), regs.end(),
                                [&](const tls_t::reg_t& r) {
                                  return lp.find_locked(r.id) != r.pool;
                                }),
                 regs.end());
    }
    regs.reserve(regs.size() + 1);  // so that the push_back below cannot throw
    deque_t* d = nullptr;
    {
      std::lock_guard<std::mutex> g(reg_mu_);
      for (size_t i = 1; i < owned_.size() && !d; ++i)
        if (!owned_[i]->owned) d = owned_[i].get();
      if (!d) {
        owned_.reserve(owned_.size() + 1);
        auto fresh = std::make_unique<deque_t>(
            attr.npackets, (hot_.id * 0x9E3779B97F4A7C15ull +
                            owned_.size() * 0xBF58476D1CE4E5B9ull) |
                               1);
        d = fresh.get();
        deques_.push_back(d);  // may throw: fresh is freed
        owned_.push_back(std::move(fresh));
        ndeques_.store(owned_.size(), std::memory_order_release);
      }
      d->owned = true;
      ++nlive_;
      set_threshold_locked();
    }
    regs.push_back({hot_.id, this, d});
    return d;
  } catch (const std::bad_alloc&) {
    return hot_.shared;  // works, only slower
  }
}

// At thread exit (under live_pools().mu): every packet to the shared deque,
// the deque free for adoption.
void packet_pool_impl_t::release(deque_t* d)
{
  std::lock_guard<std::mutex> g(reg_mu_);
  deque_t* shared = hot_.shared;
  d->q.lock();
  shared->q.lock();
  d->q.move_head_to(shared->q, d->q.size());
  shared->q.unlock();
  d->q.unlock();
  d->owned = false;
  --nlive_;
  set_threshold_locked();
}

packet_t* packet_pool_impl_t::get()
{
  deque_t* d = local();
  d->q.lock();
  packet_t* p;
  if (__builtin_expect(!d->q.empty(), 1))
    p = d->q.pop_tail();
  else
    p = steal_into(d);
  d->q.unlock();
  return p;
}

// d is locked and empty. One attempt: the shared deque, else the first
// non-empty deque from a random start that can be try-locked; half of its
// packets, from its head.
packet_t* packet_pool_impl_t::steal_into(deque_t* d)
{
  deque_t* shared = hot_.shared;
  auto take_half = [d](deque_t* v) {
    size_t n = v->q.size();
    if (n > 0) v->q.move_head_to(d->q, (n + 1) / 2);
  };
  // The shared deque is waited for (its critical sections are short and
  // whoever holds it waits for nothing); an owned victim only try-locked.
  if (d != shared && shared->q.size_hint() > 0) {
    shared->q.lock();
    take_half(shared);
    shared->q.unlock();
    if (!d->q.empty()) return d->q.pop_tail();
  }
  size_t n = ndeques_.load(std::memory_order_acquire);
  size_t start = static_cast<size_t>(xorshift(d->rng) % n);
  for (size_t i = 0; i < n; ++i) {
    size_t idx = start + i < n ? start + i : start + i - n;
    deque_t* v = deques_.get(idx);
    if (v == d || v == shared || v->q.size_hint() == 0) continue;
    if (!v->q.try_lock()) continue;
    take_half(v);
    v->q.unlock();
    if (!d->q.empty()) return d->q.pop_tail();
  }
  return nullptr;
}

void packet_pool_impl_t::put(packet_t* p)
{
  packet_pool_impl_t* pool = p->pool;
  if (!pool) {  // a detached copy (detach): from the heap
    p->~packet_t();
    std::free(p);
    return;
  }
  deque_t* d = pool->local();
  d->q.lock();
  d->q.push_tail(p);
  size_t n = d->q.size();
  if (__builtin_expect(n > pool->hot_.threshold.load(std::memory_order_relaxed),
                       0))
    pool->flush(d, n);
  d->q.unlock();
}

// d is locked and holds n > threshold packets: its oldest go to the shared
// deque until threshold / 2 remain (amortized: once every threshold / 2
// puts at most).
void packet_pool_impl_t::flush(deque_t* d, size_t n)
{
  deque_t* shared = hot_.shared;
  if (d == shared) return;
  shared->q.lock();
  size_t keep = hot_.threshold.load(std::memory_order_relaxed) / 2;
  if (n > keep) d->q.move_head_to(shared->q, n - keep);
  shared->q.unlock();
}

void packet_pool_impl_t::reclaim_recvs(const void* owner)
{
  deque_t* shared = hot_.shared;
  for (size_t i = 0; i < attr.npackets; ++i) {
    auto* p = reinterpret_cast<packet_t*>(slab_ + i * stride_);
    if (static_cast<void*>(p->recv_owner) != owner) continue;
    p->recv_owner = nullptr;
    shared->q.lock();
    shared->q.push_tail(p);
    shared->q.unlock();
  }
}

size_t packet_pool_impl_t::count_local()
{
  deque_t* d = local();
  d->q.lock();
  size_t n = d->q.size();
  d->q.unlock();
  return n;
}

size_t packet_pool_impl_t::count_free() const
{
  size_t n = ndeques_.load(std::memory_order_acquire);
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += deques_.get(i)->q.size_hint();
  return total;
}

packet_pool_t alloc_packet_pool_x::call_impl(runtime_t runtime,
                                             const packet_pool_attr_t& attr)
{
  resolve_runtime(runtime, "alloc_packet_pool");
  auto* pool = new packet_pool_impl_t(attr);
  globals::packet_pools().add(pool);
  return packet_pool_t(pool);
}

void free_packet_pool_x::call_impl(packet_pool_t* packet_pool, runtime_t)
{
  const char* call = "free_packet_pool";
  if (!packet_pool) util::throw_fatal(call, ": null packet pool pointer");
  packet_pool_impl_t* pool = util::checked(packet_pool->p_impl, call);
  globals::packet_pools().check(pool, call, "packet pool");
  if (pool->users.load() > 0)
    util::throw_fatal(call, ": packet pool ", static_cast<void*>(pool),
                      " still supplies ", pool->users.load(),
                      " device(s); free them first");
  globals::packet_pools().remove(pool, call, "packet pool");
  delete pool;
  packet_pool->p_impl = nullptr;
}

packet_pool_t get_default_packet_pool_x::call_impl(runtime_t runtime)
{
  return packet_pool_t(
      resolve_runtime(runtime, "get_default_packet_pool")->default_pool);
}

size_t get_max_bcopy_size_x::call_impl(runtime_t runtime,
                                       packet_pool_t packet_pool)
{
  packet_pool_impl_t* pool = checked_pool(packet_pool, "get_max_bcopy_size");
  if (!pool)
    pool = resolve_runtime(runtime, "get_max_bcopy_size")->default_pool;
  util::checked(pool, "get_max_bcopy_size");
  return pool->attr.packet_size - packet_pool_impl_t::kHeaderBytes;
}

}  // namespace lci

namespace lci
{

packet_t* packet_pool_impl_t::heap_packet(const void* data, size_t bytes)
{
  size_t total = (sizeof(packet_t) + bytes + 63) / 64 * 64;
  void* mem = std::aligned_alloc(64, total);
  if (!mem) return nullptr;
  auto* h = new (mem) packet_t();
  h->pool = nullptr;
  h->recv_owner = nullptr;
  h->send_comp = nullptr;
  std::memcpy(h->data(), data, bytes);
  return h;
}

packet_t* packet_pool_impl_t::heap_copy(packet_t* p, size_t bytes)
{
  packet_t* h = heap_packet(p->data(), bytes);
  if (!h) return nullptr;
  h->length = p->length;
  h->arrived_on = p->arrived_on;
  return h;
}

packet_t* packet_pool_impl_t::detach(packet_t* p, size_t bytes)
{
  packet_t* h = heap_copy(p, bytes);
  if (!h) return p;  // keep the pool's packet
  put(p);
  return h;
}

}  // namespace lci
