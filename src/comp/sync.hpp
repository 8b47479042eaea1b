// Synchronizer (paper 4.1.4): ready after `threshold` signals.
//
// threshold 1: one atomic flag and one status slot. signal writes the slot
//   and sets the flag (release); test reads the flag (acquire), copies the
//   slot and clears the flag.
// threshold N: a fixed array of N statuses and two atomic counters: a signal
//   reserves a slot with one fetch-and-add, writes it, and publishes it with
//   a fetch-and-add on the second counter; test waits for the second counter
//   to reach N.
//
// A successful test() copies the statuses out and re-arms the synchronizer.
// Contract: at most `threshold` signals per round, the signals of the next
// round come after the test that ended this one (the user starts the next
// round's operations after seeing it ready), and one thread tests at a time;
// signals may come from any thread.
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
    if (one_) {
      status_ = status;
      flag_.store(true, std::memory_order_release);
      return;
    }
    int slot = reserved_.fetch_add(1, std::memory_order_relaxed);
    if (slot < attr.threshold) statuses_[slot] = status;
    ready_.fetch_add(1, std::memory_order_release);
  }

  bool test(status_t* p_out)
  {
    if (one_) {
      if (!flag_.load(std::memory_order_acquire)) return false;
      if (p_out) *p_out = status_;
      flag_.store(false, std::memory_order_release);
      return true;
    }
    if (ready_.load(std::memory_order_acquire) < attr.threshold) return false;
    if (p_out)
      for (int i = 0; i < attr.threshold; ++i) p_out[i] = statuses_[i];
    reserved_.store(0, std::memory_order_relaxed);
    ready_.store(0, std::memory_order_release);
    return true;
  }

  sync_attr_t attr;

 private:
  const bool one_;
  // threshold 1
  alignas(64) std::atomic<bool> flag_{false};
  status_t status_;
  // threshold N
  alignas(64) std::atomic<int> reserved_{0};
  alignas(64) std::atomic<int> ready_{0};
  std::unique_ptr<status_t[]> statuses_;
};

// The synchronizer behind `comp`; throws fatal_error naming `call` when
// `comp` is empty, freed, foreign or of another kind (comp.cpp).
sync_impl_t* checked_sync(comp_t comp, const char* call);

}  // namespace lci

#endif  // LCI_COMP_SYNC_HPP
