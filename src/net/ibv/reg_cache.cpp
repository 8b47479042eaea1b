#include "net/ibv/reg_cache.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.hpp"

namespace lci::net::ibv
{

reg_cache_t::reg_cache_t(verbs_t* v, bool share, bool odp, const mr_t* implicit)
    : v_(v), share_(share), odp_(odp), implicit_(implicit)
{
}

reg_cache_t::~reg_cache_t()
{
  for (auto& [start, e] : by_start_) {
    v_->dereg_mr(e->mr);
    delete e;
  }
}

// A cached entry covering [a, b): entries starting at or below `a`,
// nearest first; a few looked at (overlaps are rare: page-rounded buffers
// of one pool), a miss only costs a registration.
reg_cache_t::entry_t* reg_cache_t::find(uintptr_t a, uintptr_t b,
                                        bool internal_only)
{
  auto it = by_start_.upper_bound(a);
  for (int i = 0; i < 16 && it != by_start_.begin(); ++i) {
    --it;
    entry_t* e = it->second;
    if (e->end >= b && (!internal_only || e->internal)) return e;
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

const reg_cache_t::entry_t* reg_cache_t::acquire(void* buf, size_t size,
                                                 const char* call)
{
  const uintptr_t a = reinterpret_cast<uintptr_t>(buf);
  if (implicit_) {
    // one registration for everything: a handle per user all the same, so
    // release stays uniform
    return new entry_t{a, a + size, *implicit_, 1, false};
  }
  if (share_) {
    util::spin_guard_t g(lock_);
    if (entry_t* e = find(a, a + size, false)) {
      if (!e->internal) {
        ++e->refs;
        return e;
      }
    }
  }
  mr_t mr = reg(buf, size, call);
  auto* e = new entry_t{a, a + size, mr, 1, false};
  if (share_) {
    util::spin_guard_t g(lock_);
    by_start_.emplace(a, e);
  }
  return e;
}

void reg_cache_t::release(const entry_t* ce)
{
  auto* e = const_cast<entry_t*>(ce);
  if (implicit_) {
    delete e;
    return;
  }
  if (share_) {
    util::spin_guard_t g(lock_);
    if (--e->refs > 0) return;
    auto range = by_start_.equal_range(e->start);
    for (auto it = range.first; it != range.second; ++it)
      if (it->second == e) {
        by_start_.erase(it);
        break;
      }
  }
  v_->dereg_mr(e->mr);
  delete e;
}

uint32_t reg_cache_t::lkey(const void* buf, size_t size)
{
  if (implicit_) return implicit_->lkey;
  const uintptr_t a = reinterpret_cast<uintptr_t>(buf);
  util::spin_guard_t g(lock_);
  if (entry_t* e = find(a, a + size, true)) return e->mr.lkey;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = a & ~(page - 1);
  const uintptr_t hi = (a + size + page - 1) & ~(page - 1);
  mr_t mr = reg(reinterpret_cast<void*>(lo), hi - lo, "ibv backend");
  auto* e = new entry_t{lo, hi, mr, 0, true};
  by_start_.emplace(lo, e);
  return mr.lkey;
}

size_t reg_cache_t::entries()
{
  util::spin_guard_t g(lock_);
  return by_start_.size();
}

}  // namespace lci::net::ibv
