// The busy-wait policy of progress: after `idle_spins` (a runtime
// attribute, 64 by default) progress calls in a row on one thread that
// found nothing to do, that thread gives the core away once (sched_yield).
// Every blocking call (sync_wait, blocking posts, blocking collectives,
// wait_drained) waits by calling progress, and a program's own loop around
// lci::progress() gets the same policy. With a core per rank a poll that
// has work never yields and an idle one costs one system call per
// idle_spins polls; with more ranks than cores a pure spin would hold the
// core for a whole time slice while the peer it waits for cannot run (4
// ranks on 2 cores: milliseconds per collective instead of tens of
// microseconds; a program's own progress loop at 4 ranks on 2 cores: 800x
// slower per message, docs/PERFORMANCE.md).
#ifndef LCI_UTIL_IDLE_HPP
#define LCI_UTIL_IDLE_HPP

#include <cstddef>
#include <thread>

namespace lci::util
{

// After each poll of this thread: did it find work? spins: the runtime's
// idle_spins attribute (0: never yield).
// (initial-exec: a fixed offset from the thread pointer; the default model
// in a shared library reaches it through __tls_get_addr on every poll)
inline void idle_polled(size_t spins, bool did_work)
{
#if defined(__GNUC__) && !defined(__APPLE__)
  thread_local size_t idle __attribute__((tls_model("initial-exec"))) = 0;
#else
  thread_local size_t idle = 0;
#endif
  if (did_work) {
    idle = 0;
  } else if (spins && ++idle >= spins) {
    idle = 0;
    std::this_thread::yield();
  }
}

}  // namespace lci::util

#endif  // LCI_UTIL_IDLE_HPP
