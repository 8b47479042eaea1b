// The busy-wait policy of every blocking call (sync_wait, blocking posts,
// blocking collectives): poll progress; after `idle_spins` (a runtime
// attribute, 64 by default) polls in a row that found nothing to do, give
// the core away once (sched_yield). With a
// core per rank a wait that has work never yields and an idle one costs one
// system call per kIdleSpins polls; with more ranks than cores a pure spin
// would hold the core for a whole time slice while the peer it waits for
// cannot run (4 ranks on 2 cores: milliseconds per collective instead of
// tens of microseconds).
#ifndef LCI_UTIL_IDLE_HPP
#define LCI_UTIL_IDLE_HPP

#include <cstddef>
#include <thread>

namespace lci::util
{

class idle_wait_t
{
 public:
  // spins: the runtime's idle_spins attribute (0: never yield)
  explicit idle_wait_t(size_t spins) : spins_(spins) {}
  // after each poll: did it find work?
  void polled(bool did_work)
  {
    if (did_work) {
      idle_ = 0;
    } else if (spins_ && ++idle_ >= spins_) {
      idle_ = 0;
      std::this_thread::yield();
    }
  }

 private:
  size_t spins_;
  size_t idle_ = 0;
};

}  // namespace lci::util

#endif  // LCI_UTIL_IDLE_HPP
