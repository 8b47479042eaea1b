// Small integer ids for objects that a peer names in a message (rendezvous
// contexts: the id travels in RTR, FIN and in the immediate data of RDMA
// writes, which may be only 32 bits wide). An id is a slot index (low 24
// bits) and the slot's generation (high 8 bits), so a stale id, whose slot
// was reused, does not name the new object; the caller checks that the
// object it finds carries the id it asked for.
//
// Lookup is lock-free (an MPMC array); add and remove take a spinlock.
// Thread safety: any-thread.
#ifndef LCI_UTIL_ID_TABLE_HPP
#define LCI_UTIL_ID_TABLE_HPP

#include <cstdint>
#include <vector>

#include "util/error.hpp"
#include "util/mpmc_array.hpp"
#include "util/spinlock.hpp"

namespace lci::util
{

template <typename T>
class id_table_t
{
 public:
  static constexpr uint32_t kIndexBits = 24;
  static constexpr uint32_t kIndexMask = (1u << kIndexBits) - 1;

  uint32_t add(T* p)
  {
    uint32_t idx;
    uint32_t gen;
    {
      spin_guard_t g(lock_);
      if (!free_.empty()) {
        idx = free_.back();
        free_.pop_back();
      } else {
        if (gens_.size() > kIndexMask)
          throw_fatal("more than ", kIndexMask,
                      " rendezvous transfers in flight");
        idx = static_cast<uint32_t>(gens_.size());
        gens_.push_back(0);
      }
      gen = ++gens_[idx] & 0xff;
    }
    slots_.put(idx, p);
    return idx | (gen << kIndexBits);
  }

  // The object in id's slot (check its id), or nullptr.
  T* get(uint32_t id) const { return slots_.get(id & kIndexMask, nullptr); }

  void remove(uint32_t id)
  {
    uint32_t idx = id & kIndexMask;
    slots_.put(idx, nullptr);
    spin_guard_t g(lock_);
    free_.push_back(idx);
  }

  // Removes `p` from id's slot if it is still there: true for exactly one
  // caller, which then owns the object (take_if may race for it).
  bool take(uint32_t id, T* p)
  {
    uint32_t idx = id & kIndexMask;
    spin_guard_t g(lock_);
    if (slots_.get(idx, nullptr) != p) return false;
    slots_.put(idx, nullptr);
    free_.push_back(idx);
    return true;
  }

  // Removes every object for which pred(p) is true, appending it to `out`
  // (pred runs under the table's lock: it must not use the table).
  template <typename F>
  void take_if(F pred, std::vector<T*>* out)
  {
    spin_guard_t g(lock_);
    for (uint32_t idx = 0; idx < gens_.size(); ++idx) {
      T* p = slots_.get(idx, nullptr);
      if (!p || !pred(p)) continue;
      slots_.put(idx, nullptr);
      free_.push_back(idx);
      out->push_back(p);
    }
  }

  size_t count_live()
  {
    spin_guard_t g(lock_);
    return gens_.size() - free_.size();
  }

 private:
  mpmc_array_t<T*> slots_;
  spinlock_t lock_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> gens_;  // per slot, bumped at every add
};

}  // namespace lci::util

#endif  // LCI_UTIL_ID_TABLE_HPP
