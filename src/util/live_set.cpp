#include "util/live_set.hpp"

// initial-exec: a fixed offset from the thread pointer (see
// resource/packet_pool.cpp); 16 x 24 bytes, well inside glibc's static TLS
// surplus for libraries loaded with dlopen.
#if defined(__GNUC__) && !defined(__APPLE__)
#define LCI_LIVE_TLS __attribute__((tls_model("initial-exec")))
#else
#define LCI_LIVE_TLS
#endif

namespace lci::util
{
namespace
{
thread_local live_cache_t::entry_t
    g_entries[live_cache_t::kSlots] LCI_LIVE_TLS = {};
}  // namespace

live_cache_t::entry_t* live_cache_t::entries() { return g_entries; }

}  // namespace lci::util
