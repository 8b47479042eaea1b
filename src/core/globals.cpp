#include "core/globals.hpp"

namespace lci::globals
{

util::live_set_t& runtimes()
{
  static util::live_set_t* s = new util::live_set_t;  // never destroyed
  return *s;
}
util::live_set_t& devices()
{
  static util::live_set_t* s = new util::live_set_t;  // never destroyed
  return *s;
}
util::live_set_t& packet_pools()
{
  static util::live_set_t* s = new util::live_set_t;  // never destroyed
  return *s;
}
util::live_set_t& matching_engines()
{
  static util::live_set_t* s = new util::live_set_t;  // never destroyed
  return *s;
}
util::live_set_t& comps()
{
  static util::live_set_t* s = new util::live_set_t;  // never destroyed
  return *s;
}
util::live_set_t& graph_nodes()
{
  static util::live_set_t* s = new util::live_set_t;  // never destroyed
  return *s;
}

util::live_set_t& mrs()
{
  static util::live_set_t* s = new util::live_set_t;  // never destroyed
  return *s;
}
runtime_t& g_runtime()
{
  static runtime_t rt;
  return rt;
}

}  // namespace lci::globals
