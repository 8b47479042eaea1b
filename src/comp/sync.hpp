// Synchronizer (paper 4.1.4): ready after `threshold` signals. Signals
// reserve a slot with one atomic counter and publish it with a second, so
// concurrent signals never lock. A successful test() copies the statuses out
// and re-arms it. Contract: at most `threshold` signals per round and one
// thread testing at a time; signal may come from any thread.
#ifndef LCI_COMP_SYNC_HPP
#define LCI_COMP_SYNC_HPP

#include <atomic>
#include <memory>

#include "lci.hpp"

namespace lci
{

class sync_impl_t final : public comp_impl_t
{
 public:
  explicit sync_impl_t(const sync_attr_t& attr);

  void signal(status_t status) override
  {
    int slot = reserved_.fetch_add(1, std::memory_order_relaxed);
    if (slot < attr.threshold) statuses_[slot] = status;
    ready_.fetch_add(1, std::memory_order_release);
  }

  bool test(status_t* p_out)
  {
    if (ready_.load(std::memory_order_acquire) < attr.threshold) return false;
    if (p_out)
      for (int i = 0; i < attr.threshold; ++i) p_out[i] = statuses_[i];
    reserved_.store(0, std::memory_order_relaxed);
    ready_.store(0, std::memory_order_release);
    return true;
  }

  sync_attr_t attr;

 private:
  alignas(64) std::atomic<int> reserved_{0};
  alignas(64) std::atomic<int> ready_{0};
  std::unique_ptr<status_t[]> statuses_;
};

}  // namespace lci

#endif  // LCI_COMP_SYNC_HPP
