#include "util/live_set.hpp"

// initial-exec (see live_set.hpp and resource/packet_pool.cpp): 16 x 24
// bytes, well inside glibc's static TLS surplus for libraries loaded with
// dlopen.
namespace lci::util
{

thread_local live_cache_t::entry_t
    g_live_cache[live_cache_t::kSlots] LCI_TLS_INITIAL_EXEC = {};

}  // namespace lci::util
