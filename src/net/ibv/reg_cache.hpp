// The ibv backend's registration cache. Two users:
//   - register_memory (user regions, and the core's on-the-fly
//     registrations of rendezvous, put and get buffers): a live registration
//     that covers the region is shared (reference counted) instead of
//     registering the same pages again; the last release deregisters. Idle
//     registrations are not kept: a pinned registration of memory the
//     program has unmapped would keep the old pages, and a later mapping at
//     the same address would silently miss the data. So a buffer freed and
//     another allocated at its address never meets the old registration.
//   - the backend's own send and receive buffers (post_send, post_recv,
//     which carry no registration): a live registration covering the
//     buffer serves it (the raw API's user buffers, registered by their
//     owner); else the packet pool region holding it (net/regions.hpp) is
//     registered whole on first use and deregistered when the pool
//     retires the region, before its memory is freed. A buffer in neither
//     is a fatal error (the core never posts one).
// With implicit on-demand paging one registration covers everything.
#ifndef LCI_NET_IBV_REG_CACHE_HPP
#define LCI_NET_IBV_REG_CACHE_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>

#include "lci.hpp"
#include "net/ibv/verbs.hpp"
#include "net/regions.hpp"
#include "util/spinlock.hpp"

namespace lci::net::ibv
{

class reg_cache_t final : public region_listener_t
{
 public:
  struct entry_t {
    uintptr_t start, end;
    mr_t mr;
    int refs;         // live register_memory users
    uint64_t region;  // a packet pool region's registration (0: a user's)
  };

  // `share`: the attribute ibv_reg_cache; `odp`: explicit on-demand paging;
  // `prefetch`: the attribute ibv_prefetch_strategy, applied to each user
  // registration with on-demand paging (explicit or implicit).
  reg_cache_t(verbs_t* v, bool share, bool odp, const mr_t* implicit,
              attr_ibv_prefetch_strategy_t prefetch =
                  attr_ibv_prefetch_strategy_t::none);
  ~reg_cache_t() override;
  reg_cache_t(const reg_cache_t&) = delete;
  reg_cache_t& operator=(const reg_cache_t&) = delete;

  // A registration covering [buf, buf + size); fatal_error naming `call`
  // when the device refuses (with the memlock limit when that is why).
  const entry_t* acquire(void* buf, size_t size, const char* call);
  void release(const entry_t* e);
  // The local key of a backend buffer.
  uint32_t lkey(const void* buf, size_t size);
  // A packet pool's region goes: its registration with it.
  void region_retired(const region_t& r) override;

  // introspection for tests
  size_t entries();
  uint64_t registrations() const { return nreg_; }
  // prefetch requests the adapter took
  uint64_t prefetches() const { return nprefetch_.load(); }

 private:
  // a listed registration covering [a, b): a user's one only (`shareable`)
  // or any; a few looked at by default (overlaps are rare), a miss only
  // costing a registration
  entry_t* find(uintptr_t a, uintptr_t b, bool shareable, size_t limit = 16);
  mr_t reg(void* buf, size_t size, const char* call);
  void prefetch(const mr_t& mr, void* buf, size_t size);
  void erase_locked(entry_t* e);

  verbs_t* v_;
  bool share_, odp_;
  const mr_t* implicit_;
  util::spinlock_t lock_;
  // every live registration (user ones too when not shared, so that a
  // raw post of a user buffer finds its registration)
  std::multimap<uintptr_t, entry_t*> by_start_;
  uint64_t nreg_ = 0;
  attr_ibv_prefetch_strategy_t prefetch_;
  std::atomic<uint64_t> nprefetch_{0};
  std::atomic<bool> prefetch_refused_{false};
};

}  // namespace lci::net::ibv

#endif  // LCI_NET_IBV_REG_CACHE_HPP
