// The set of live objects of one kind (runtimes, devices, completion
// objects...), so that freeing something twice, or using a freed handle in a
// free call, is a clear error instead of a crash. Only allocation and free
// paths use it. Thread safety: any-thread.
#ifndef LCI_UTIL_LIVE_SET_HPP
#define LCI_UTIL_LIVE_SET_HPP

#include <mutex>
#include <unordered_set>

#include "util/error.hpp"

namespace lci::util
{

class live_set_t
{
 public:
  void add(const void* p)
  {
    std::lock_guard<std::mutex> g(mu_);
    set_.insert(p);
  }
  bool contains(const void* p)
  {
    std::lock_guard<std::mutex> g(mu_);
    return set_.count(p) != 0;
  }
  // Throws "`call`: <what> <p> is not live (already freed?)".
  void remove(const void* p, const char* call, const char* what)
  {
    std::lock_guard<std::mutex> g(mu_);
    if (set_.erase(p) == 0)
      throw_fatal(call, ": ", what, " ", p,
                  " is not allocated (already freed?)");
  }
  void check(const void* p, const char* call, const char* what)
  {
    if (!contains(p))
      throw_fatal(call, ": ", what, " ", p,
                  " is not allocated (already freed?)");
  }

 private:
  std::mutex mu_;
  std::unordered_set<const void*> set_;
};

}  // namespace lci::util

#endif  // LCI_UTIL_LIVE_SET_HPP
