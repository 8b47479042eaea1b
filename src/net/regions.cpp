#include "net/regions.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

namespace lci::net
{
namespace
{

struct table_t {
  std::mutex mu;
  std::map<uintptr_t, region_t> by_base;  // live regions
  std::vector<region_listener_t*> listeners;
  uint64_t next_id = 1;
};

// never destroyed: pools freed by static destructors still find it
table_t& table()
{
  static table_t* t = new table_t;
  return *t;
}

}  // namespace

uint64_t announce_region(const void* base, size_t len)
{
  table_t& t = table();
  std::lock_guard<std::mutex> g(t.mu);
  region_t r;
  r.base = reinterpret_cast<uintptr_t>(base);
  r.len = len;
  r.id = t.next_id++;
  t.by_base[r.base] = r;
  return r.id;
}

void retire_region(uint64_t id)
{
  table_t& t = table();
  // listeners run under the table's lock, so that one being removed is
  // never called after remove_region_listener returns
  std::lock_guard<std::mutex> g(t.mu);
  auto it = std::find_if(t.by_base.begin(), t.by_base.end(),
                         [id](const auto& e) { return e.second.id == id; });
  if (it == t.by_base.end()) return;
  const region_t r = it->second;
  t.by_base.erase(it);
  for (region_listener_t* l : t.listeners) l->region_retired(r);
}

bool find_region(const void* addr, size_t len, region_t* out)
{
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  table_t& t = table();
  std::lock_guard<std::mutex> g(t.mu);
  auto it = t.by_base.upper_bound(a);
  if (it == t.by_base.begin()) return false;
  --it;
  const region_t& r = it->second;
  if (a + len > r.base + r.len) return false;
  *out = r;
  return true;
}

void add_region_listener(region_listener_t* l)
{
  table_t& t = table();
  std::lock_guard<std::mutex> g(t.mu);
  t.listeners.push_back(l);
}

void remove_region_listener(region_listener_t* l)
{
  table_t& t = table();
  std::lock_guard<std::mutex> g(t.mu);
  t.listeners.erase(std::remove(t.listeners.begin(), t.listeners.end(), l),
                    t.listeners.end());
}

}  // namespace lci::net
