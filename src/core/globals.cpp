#include "core/globals.hpp"

namespace lci::globals
{

runtime_t& g_runtime()
{
  static runtime_t rt;
  return rt;
}

}  // namespace lci::globals
