// The one place that reads LCI_ATTR_* environment variables. Called by the
// generated attribute defaults (lci_binding.cpp); nothing else calls getenv
// for configuration.
#ifndef LCI_UTIL_CONFIG_HPP
#define LCI_UTIL_CONFIG_HPP

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "util/error.hpp"

namespace lci::util
{

// The raw value, or nullptr when unset (or empty).
const char* env_get(const char* name);

bool parse_bool(const char* name, const char* value);
uint64_t parse_uint(const char* name, const char* value);
int64_t parse_int(const char* name, const char* value);
double parse_double(const char* name, const char* value);

template <typename T>
T env_attr(const char* name, T def)
{
  const char* v = env_get(name);
  if (!v) return def;
  if constexpr (std::is_same_v<T, bool>) {
    return parse_bool(name, v);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(parse_double(name, v));
  } else if constexpr (std::is_unsigned_v<T>) {
    uint64_t x = parse_uint(name, v);
    if (x > static_cast<uint64_t>(static_cast<T>(-1)))
      throw_fatal("environment ", name, "=", v, ": value out of range");
    return static_cast<T>(x);
  } else {
    int64_t x = parse_int(name, v);
    if (static_cast<int64_t>(static_cast<T>(x)) != x)
      throw_fatal("environment ", name, "=", v, ": value out of range");
    return static_cast<T>(x);
  }
}

std::string env_attr_choice(const char* name, const char* def,
                            std::initializer_list<const char*> choices);

}  // namespace lci::util

#endif  // LCI_UTIL_CONFIG_HPP
