#include "resource/globals.hpp"

#include <mutex>
#include <string>
#include <unordered_set>

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

namespace lci
{

const char* DEFAULT_NAME = "unnamed";

const char* detail::resource_name(const char* name)
{
  if (!name) return DEFAULT_NAME;
  // Never freed: a resource's name stays valid after the resource, as the
  // pointers its getters returned may outlive it; one copy per distinct
  // name bounds the memory by the names a program uses.
  static std::mutex mu;
  static auto* names = new std::unordered_set<std::string>;
  std::lock_guard<std::mutex> g(mu);
  return names->insert(name).first->c_str();
}

}  // namespace lci
