// Process-wide state: the global runtime and the sets of live objects used
// to turn double frees and uses of freed or foreign handles into clear
// errors (util/live_set.hpp).
#ifndef LCI_CORE_GLOBALS_HPP
#define LCI_CORE_GLOBALS_HPP

#include "lci.hpp"
#include "util/live_set.hpp"

namespace lci::globals
{

// Each set is made at its first use and never destroyed (a handle may be
// checked during exit); inline, so that a check costs no call.
#define LCI_LIVE_SET(name)                                               \
  inline util::live_set_t& name()                                        \
  {                                                                      \
    static util::live_set_t* s = new util::live_set_t; /* never freed */ \
    return *s;                                                           \
  }
LCI_LIVE_SET(runtimes)
LCI_LIVE_SET(devices)
LCI_LIVE_SET(packet_pools)
LCI_LIVE_SET(matching_engines)
LCI_LIVE_SET(comps)
LCI_LIVE_SET(mrs)
LCI_LIVE_SET(graph_nodes)
#undef LCI_LIVE_SET

// The global runtime handle (g_runtime_init / g_runtime_fina).
runtime_t& g_runtime();

}  // namespace lci::globals

#endif  // LCI_CORE_GLOBALS_HPP
