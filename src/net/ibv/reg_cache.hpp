// The ibv backend's registration cache. Two users:
//   - register_memory (user regions, and the core's on-the-fly
//     registrations of rendezvous, put and get buffers): a live registration
//     that covers the region is shared (reference counted) instead of
//     registering the same pages again; the last release deregisters. Idle
//     registrations are not kept: a pinned registration of memory the
//     program has unmapped would keep the old pages, and a later mapping at
//     the same address would silently miss the data.
//   - the backend's own send and receive buffers (post_send, post_recv: the
//     core's packets, which carry no registration): looked up by address,
//     registered on a miss by whole pages and kept until the context goes.
// With implicit on-demand paging one registration covers everything.
#ifndef LCI_NET_IBV_REG_CACHE_HPP
#define LCI_NET_IBV_REG_CACHE_HPP

#include <cstddef>
#include <cstdint>
#include <map>

#include "net/ibv/verbs.hpp"
#include "util/spinlock.hpp"

namespace lci::net::ibv
{

class reg_cache_t
{
 public:
  struct entry_t {
    uintptr_t start, end;
    mr_t mr;
    int refs;       // live register_memory users
    bool internal;  // a send/receive buffer registration, kept
  };

  // `share`: the attribute ibv_reg_cache; `odp`: explicit on-demand paging.
  reg_cache_t(verbs_t* v, bool share, bool odp, const mr_t* implicit);
  ~reg_cache_t();
  reg_cache_t(const reg_cache_t&) = delete;
  reg_cache_t& operator=(const reg_cache_t&) = delete;

  // A registration covering [buf, buf + size); fatal_error naming `call`
  // when the device refuses (with the memlock limit when that is why).
  const entry_t* acquire(void* buf, size_t size, const char* call);
  void release(const entry_t* e);
  // The local key of a backend buffer.
  uint32_t lkey(const void* buf, size_t size);

  // introspection for tests
  size_t entries();
  uint64_t registrations() const { return nreg_; }

 private:
  entry_t* find(uintptr_t a, uintptr_t b, bool internal_only);
  mr_t reg(void* buf, size_t size, const char* call);

  verbs_t* v_;
  bool share_, odp_;
  const mr_t* implicit_;
  util::spinlock_t lock_;
  std::multimap<uintptr_t, entry_t*> by_start_;
  uint64_t nreg_ = 0;
};

}  // namespace lci::net::ibv

#endif  // LCI_NET_IBV_REG_CACHE_HPP
