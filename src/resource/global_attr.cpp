// Process-wide attribute defaults (upstream LCI 2's global_initialize,
// get_g_default_attr and set_g_default_attr). Every allocation takes its
// unset attributes from the generated get_default_<resource>_attr: the
// environment over the built-in defaults, unless set_g_default_attr gave
// other values, which then stand for every attribute until the last
// global_finalize.
#include <mutex>

#include "lci.hpp"
#include "util/error.hpp"

namespace lci
{

namespace
{
struct g_default_state_t {
  std::mutex mu;
  bool set = false;  // set_g_default_attr was called
  global_attr_t attr;
  int ninit = 0;  // global_initialize calls not yet finalized
};

g_default_state_t& state()
{
  static g_default_state_t s;
  return s;
}
}  // namespace

namespace detail
{
bool get_set_g_default_attr(global_attr_t* out)
{
  g_default_state_t& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  if (!s.set) return false;
  *out = s.attr;
  return true;
}
}  // namespace detail

void global_initialize_x::call_impl()
{
  // the environment is parsed now, so a bad LCI_ATTR_* fails here
  (void)detail::collect_g_default_attr("global_initialize");
  g_default_state_t& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  ++s.ninit;
}

void global_finalize_x::call_impl()
{
  g_default_state_t& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  if (s.ninit == 0)
    util::throw_fatal(
        "global_finalize: no global_initialize to match (each "
        "global_initialize takes one global_finalize)");
  if (--s.ninit == 0) s.set = false;
}

global_attr_t get_g_default_attr_x::call_impl()
{
  return detail::collect_g_default_attr("get_g_default_attr");
}

void set_g_default_attr_x::call_impl(global_attr_t attr)
{
  g_default_state_t& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  s.attr = attr;
  s.set = true;
}

}  // namespace lci
