#include "net/socket/keys.hpp"

#include <unistd.h>

#include <chrono>

namespace lci::net::socket
{

key_table_t::key_table_t()
{
  const uint64_t t = static_cast<uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count());
  next_.store((t * 0x9E3779B97F4A7C15ull) ^
              (static_cast<uint64_t>(::getpid()) << 40));
}

void key_table_t::add(uint64_t rkey, char* base, size_t size)
{
  std::lock_guard<std::mutex> g(mu_);
  regions_[rkey] = region_t{base, size};
}

void key_table_t::remove(uint64_t rkey)
{
  std::lock_guard<std::mutex> g(mu_);
  regions_.erase(rkey);
}

char* key_table_t::find(uint64_t rkey, uint64_t addr, uint64_t size) const
{
  std::lock_guard<std::mutex> g(mu_);
  auto it = regions_.find(rkey);
  if (it == regions_.end() || !it->second.base) return nullptr;
  const region_t& r = it->second;
  const uint64_t base = reinterpret_cast<uintptr_t>(r.base);
  // overflow-safe: the offset and the size each at most the region's size
  if (addr < base) return nullptr;
  const uint64_t off = addr - base;
  if (off > r.size || size > r.size - off) return nullptr;
  return r.base + off;
}

}  // namespace lci::net::socket
