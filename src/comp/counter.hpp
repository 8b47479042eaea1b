// Counter: counts signals. Thread safety: any-thread (relaxed increments,
// acquire/release on get/set).
#ifndef LCI_COMP_COUNTER_HPP
#define LCI_COMP_COUNTER_HPP

#include <atomic>
#include <cstdint>
#include <typeinfo>

#include "lci.hpp"

namespace lci
{

class counter_impl_t final : public comp_impl_t
{
 public:
  void signal(status_t) override
  {
    value_.fetch_add(1, std::memory_order_acq_rel);
  }
  int64_t get() const { return value_.load(std::memory_order_acquire); }
  void set(int64_t v) { value_.store(v, std::memory_order_release); }

 private:
  std::atomic<int64_t> value_{0};
};

// Whether `comp` is a built-in counter (it ignores the statuses it is
// given, so an active message to it keeps no copy of its payload).
inline bool is_counter(const comp_impl_t* comp)
{
  // the class is final and ours: the type_info objects themselves compare
  // (type_info's operator== may compare the names with strcmp)
  return &typeid(*comp) == &typeid(counter_impl_t);
}

}  // namespace lci

#endif  // LCI_COMP_COUNTER_HPP
