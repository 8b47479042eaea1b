#include "util/config.hpp"

#include <strings.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace lci::util
{

const char* env_get(const char* name)
{
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

bool parse_bool(const char* name, const char* v)
{
  for (const char* t : {"1", "true", "on", "yes"})
    if (strcasecmp(v, t) == 0) return true;
  for (const char* f : {"0", "false", "off", "no"})
    if (strcasecmp(v, f) == 0) return false;
  throw_fatal("environment ", name, "=", v,
              ": not a boolean (use 1/0, true/false, on/off, yes/no)");
}

uint64_t parse_uint(const char* name, const char* v)
{
  const char* p = v;
  while (*p == ' ') ++p;
  if (*p == '-') throw_fatal("environment ", name, "=", v, ": negative value");
  errno = 0;
  char* end = nullptr;
  unsigned long long x = std::strtoull(p, &end, 0);
  if (end == p || *end != '\0' || errno == ERANGE)
    throw_fatal("environment ", name, "=", v, ": not an unsigned integer");
  return x;
}

int64_t parse_int(const char* name, const char* v)
{
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 0);
  if (end == v || *end != '\0' || errno == ERANGE)
    throw_fatal("environment ", name, "=", v, ": not an integer");
  return x;
}

double parse_double(const char* name, const char* v)
{
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || errno == ERANGE)
    throw_fatal("environment ", name, "=", v, ": not a number");
  return x;
}

std::string env_attr_choice(const char* name, const char* def,
                            std::initializer_list<const char*> choices)
{
  const char* v = env_get(name);
  if (!v) return def;
  std::string all;
  for (const char* c : choices) {
    if (std::strcmp(c, v) == 0) return v;
    all += all.empty() ? c : std::string(", ") + c;
  }
  throw_fatal("environment ", name, "=", v, ": unknown value (one of: ", all,
              ")");
}

}  // namespace lci::util
