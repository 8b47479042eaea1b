// Process-wide state: the global runtime and the sets of live objects used
// to turn double frees and uses of freed or foreign handles into clear
// errors (util/live_set.hpp).
#ifndef LCI_RESOURCE_GLOBALS_HPP
#define LCI_RESOURCE_GLOBALS_HPP

#include <atomic>

#include "lci.hpp"
#include "util/live_set.hpp"

namespace lci::globals
{

// Each set is made at its first use and never destroyed (a handle may be
// checked during exit). name() returns the set, making it if needed;
// name_if_made() is the set or nullptr (one load, for the cached fast path
// of a check: a set not made yet holds nothing, so a caller falls back to
// its full check).
#define LCI_LIVE_SET(name)                                               \
  inline std::atomic<util::live_set_t*> g_##name{nullptr};               \
  [[gnu::noinline, gnu::cold]] inline util::live_set_t& make_##name()    \
  {                                                                      \
    static util::live_set_t* s = new util::live_set_t; /* never freed */ \
    g_##name.store(s, std::memory_order_release);                        \
    return *s;                                                           \
  }                                                                      \
  inline util::live_set_t* name##_if_made()                              \
  {                                                                      \
    return g_##name.load(std::memory_order_acquire);                     \
  }                                                                      \
  inline util::live_set_t& name()                                        \
  {                                                                      \
    util::live_set_t* s = name##_if_made();                              \
    return __builtin_expect(s != nullptr, 1) ? *s : make_##name();       \
  }
LCI_LIVE_SET(runtimes)
LCI_LIVE_SET(devices)
LCI_LIVE_SET(packet_pools)
LCI_LIVE_SET(matching_engines)
LCI_LIVE_SET(comps)
LCI_LIVE_SET(mrs)
LCI_LIVE_SET(graph_nodes)
LCI_LIVE_SET(net_contexts)
LCI_LIVE_SET(endpoints)
#undef LCI_LIVE_SET

// The global runtime handle (g_runtime_init / g_runtime_fina) and the
// number of g_runtime_init calls not yet matched by a g_runtime_fina.
runtime_t& g_runtime();
int& g_runtime_refs();

}  // namespace lci::globals

#endif  // LCI_RESOURCE_GLOBALS_HPP
