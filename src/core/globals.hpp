// Process-wide state: the global runtime and the sets of live objects used
// to turn double frees and uses of freed or foreign handles into clear
// errors (util/live_set.hpp).
#ifndef LCI_CORE_GLOBALS_HPP
#define LCI_CORE_GLOBALS_HPP

#include "lci.hpp"
#include "util/live_set.hpp"

namespace lci::globals
{

util::live_set_t& runtimes();
util::live_set_t& devices();
util::live_set_t& packet_pools();
util::live_set_t& matching_engines();
util::live_set_t& comps();
util::live_set_t& mrs();
util::live_set_t& graph_nodes();

// The global runtime handle (g_runtime_init / g_runtime_fina).
runtime_t& g_runtime();

}  // namespace lci::globals

#endif  // LCI_CORE_GLOBALS_HPP
