#include "net/ibv/reg_cache.hpp"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "util/error.hpp"
#include "util/log.hpp"

namespace lci::net::ibv
{

reg_cache_t::reg_cache_t(verbs_t* v, bool share, bool odp, const mr_t* implicit,
                         attr_ibv_prefetch_strategy_t prefetch)
    : v_(v), share_(share), odp_(odp), implicit_(implicit), prefetch_(prefetch)
{
  if (!implicit_) add_region_listener(this);
}

reg_cache_t::~reg_cache_t()
{
  if (!implicit_) remove_region_listener(this);
  // what is left: pool regions still alive (user registrations are
  // released by their owners first)
  for (auto& [start, e] : by_start_) {
    v_->dereg_mr(e->mr);
    delete e;
  }
}

// A listed entry covering [a, b): entries starting at or below `a`,
// nearest first; at most `limit` looked at.
reg_cache_t::entry_t* reg_cache_t::find(uintptr_t a, uintptr_t b,
                                        bool shareable, size_t limit)
{
  auto it = by_start_.upper_bound(a);
  for (size_t i = 0; i < limit && it != by_start_.begin(); ++i) {
    --it;
    entry_t* e = it->second;
    if (e->end >= b && (!shareable || e->region == 0)) return e;
  }
  return nullptr;
}

mr_t reg_cache_t::reg(void* buf, size_t size, const char* call)
{
  mr_t mr = v_->reg_mr(buf, size, odp_);
  if (mr.handle) {
    ++nreg_;
    return mr;
  }
  const int e = errno;
  rlimit rl{};
  getrlimit(RLIMIT_MEMLOCK, &rl);
  if ((e == ENOMEM || e == EPERM || e == EAGAIN) &&
      rl.rlim_cur != RLIM_INFINITY)
    util::throw_fatal(call, ": the ibv backend cannot register ", size,
                      " bytes at ", buf, ": ", std::strerror(e),
                      "; the locked-memory limit is ", rl.rlim_cur / 1024,
                      " KiB: raise it (ulimit -l unlimited, or memlock in "
                      "/etc/security/limits.conf; under Slurm also "
                      "PropagateResourceLimits)");
  util::throw_fatal(call, ": the ibv backend cannot register ", size,
                    " bytes at ", buf, ": ", std::strerror(e));
}

void reg_cache_t::prefetch(const mr_t& mr, void* buf, size_t size)
{
  if (prefetch_ == attr_ibv_prefetch_strategy_t::none || size == 0 ||
      (!odp_ && !implicit_) || prefetch_refused_.load())
    return;
  const int advice = prefetch_ == attr_ibv_prefetch_strategy_t::prefetch ? 0
                     : prefetch_ == attr_ibv_prefetch_strategy_t::prefetch_write
                         ? 1
                         : 2;
  const int rc = v_->prefetch_mr(mr, buf, size, advice);
  if (rc == 0) {
    nprefetch_.fetch_add(1, std::memory_order_relaxed);
  } else if (!prefetch_refused_.exchange(true)) {
    // a hint only: the pages still come on demand
    LCI_LOG(info, "ibv backend: the device refuses ibv_prefetch_strategy ",
            get_attr_ibv_prefetch_strategy_str(prefetch_), " (",
            std::strerror(rc), "): pages are mapped on first access");
  }
}

const reg_cache_t::entry_t* reg_cache_t::acquire(void* buf, size_t size,
                                                 const char* call)
{
  const uintptr_t a = reinterpret_cast<uintptr_t>(buf);
  if (implicit_) {
    // one registration for everything: a handle per user all the same, so
    // release stays uniform
    prefetch(*implicit_, buf, size);
    return new entry_t{a, a + size, *implicit_, 1, 0};
  }
  if (share_) {
    util::spin_guard_t g(lock_);
    if (entry_t* e = find(a, a + size, true)) {
      ++e->refs;
      return e;
    }
  }
  mr_t mr = reg(buf, size, call);
  prefetch(mr, buf, size);
  auto* e = new entry_t{a, a + size, mr, 1, 0};
  util::spin_guard_t g(lock_);
  by_start_.emplace(a, e);
  return e;
}

void reg_cache_t::erase_locked(entry_t* e)
{
  auto range = by_start_.equal_range(e->start);
  for (auto it = range.first; it != range.second; ++it)
    if (it->second == e) {
      by_start_.erase(it);
      return;
    }
}

void reg_cache_t::release(const entry_t* ce)
{
  auto* e = const_cast<entry_t*>(ce);
  if (implicit_) {
    delete e;
    return;
  }
  {
    util::spin_guard_t g(lock_);
    if (--e->refs > 0) return;
    erase_locked(e);
  }
  v_->dereg_mr(e->mr);
  delete e;
}

uint32_t reg_cache_t::lkey(const void* buf, size_t size)
{
  if (implicit_) return implicit_->lkey;
  const uintptr_t a = reinterpret_cast<uintptr_t>(buf);
  {
    util::spin_guard_t g(lock_);
    if (entry_t* e = find(a, a + size, false)) return e->mr.lkey;
    // a registration starting further down (many smaller ones above it):
    // rare, so the whole list only here
    if (entry_t* e = find(a, a + size, false, SIZE_MAX)) return e->mr.lkey;
  }
  // (the region table's lock is taken outside ours: a retiring region
  // calls region_retired under it)
  region_t r;
  if (!find_region(buf, size, &r))
    util::throw_fatal("ibv backend: the buffer ", buf, " of ", size,
                      " bytes is neither registered nor in a packet pool");
  mr_t mr = reg(reinterpret_cast<void*>(r.base), r.len, "ibv backend");
  {
    util::spin_guard_t g(lock_);
    if (entry_t* e = find(a, a + size, false)) {
      // another thread registered it first
      v_->dereg_mr(mr);
      return e->mr.lkey;
    }
    by_start_.emplace(r.base, new entry_t{r.base, r.base + r.len, mr, 0, r.id});
  }
  // A pool freed while this post used it (the program's error) retired
  // its region before the entry was listed: never keep that one.
  region_t now;
  if (!find_region(buf, size, &now) || now.id != r.id) region_retired(r);
  return mr.lkey;
}

void reg_cache_t::region_retired(const region_t& r)
{
  std::vector<entry_t*> gone;
  {
    util::spin_guard_t g(lock_);
    auto range = by_start_.equal_range(r.base);
    for (auto it = range.first; it != range.second;) {
      if (it->second->region == r.id) {
        gone.push_back(it->second);
        it = by_start_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (entry_t* e : gone) {
    v_->dereg_mr(e->mr);
    delete e;
  }
}

size_t reg_cache_t::entries()
{
  util::spin_guard_t g(lock_);
  return by_start_.size();
}

}  // namespace lci::net::ibv
