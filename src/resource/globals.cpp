#include "resource/globals.hpp"

namespace lci::globals
{

runtime_t& g_runtime()
{
  static runtime_t rt;
  return rt;
}

int& g_runtime_refs()
{
  static int refs = 0;
  return refs;
}

}  // namespace lci::globals
