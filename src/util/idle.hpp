// The busy-wait policy of progress: after `idle_spins` (a runtime
// attribute, 64 by default) progress calls in a row on one thread that
// found nothing to do, that thread gives the core away once (sched_yield).
// Every blocking call (sync_wait, blocking posts, blocking collectives,
// wait_drained) waits by calling progress, and a program's own loop around
// lci::progress() gets the same policy. With a core per rank a poll that
// has work never yields and an idle one costs one system call per
// idle_spins polls; with more ranks than cores a pure spin would hold the
// core for a whole time slice while the peer it waits for cannot run, so
// every message would wait for the scheduler (docs/PERFORMANCE_LOG.md,
// "Oversubscribed").
#ifndef LCI_UTIL_IDLE_HPP
#define LCI_UTIL_IDLE_HPP

#include <cstddef>
#include <cstdint>
#include <thread>

namespace lci::util
{

// The progress counters of this thread: polls in a row that found nothing
// to do, and polls that found work (core/progress.cpp progress_device
// keeps them inline). Initial-exec: one block at a fixed offset from the
// thread pointer (the default model in a shared library reaches it through
// __tls_get_addr on every poll).
struct poll_counts_t {
  uint32_t idle = 0;
  uint32_t busy = 0;
};
#if defined(__GNUC__) && !defined(__APPLE__)
inline thread_local poll_counts_t g_poll_counts
    __attribute__((tls_model("initial-exec")));
#else
inline thread_local poll_counts_t g_poll_counts;
#endif

// The policy after `idle` polls in a row found nothing to do: gives the
// core away once every `spins` of them (the runtime's idle_spins
// attribute; 0: never).
inline void idle_yield(uint32_t* idle, size_t spins)
{
  if (spins && *idle >= spins) {
    *idle = 0;
    std::this_thread::yield();
  }
}

// A wait that keeps its core (the blocking collectives on a node with a
// core per rank, coll/coll_graph.cpp), called before each of its progress
// calls: the idle count stays below the default yield point while it keeps
// the period of 8 at which progress checks the peers. (An idle_spins of 32
// or less still yields.)
inline void idle_keep_core()
{
  uint32_t& idle = g_poll_counts.idle;
  if (idle >= 32) idle -= 24;
}

// After a poll of this thread that is not progress_device's (a wait with
// nothing to progress): did it find work?
inline void idle_polled(size_t spins, bool did_work)
{
  poll_counts_t& c = g_poll_counts;
  if (did_work) {
    c.idle = 0;
    return;
  }
  ++c.idle;
  idle_yield(&c.idle, spins);
}

}  // namespace lci::util

#endif  // LCI_UTIL_IDLE_HPP
