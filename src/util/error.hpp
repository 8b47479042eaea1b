// Fatal errors and argument checks. The message always names the call and
// the value that was wrong.
#ifndef LCI_UTIL_ERROR_HPP
#define LCI_UTIL_ERROR_HPP

#include <sstream>
#include <string>

#include "lci.hpp"

namespace lci::util
{

template <typename... Args>
[[noreturn]] [[gnu::cold]] void throw_fatal(const Args&... args)
{
  std::ostringstream os;
  (os << ... << args);
  throw fatal_error(os.str());
}

// Throws when `p` is null: "`call`: empty handle (never allocated or
// already freed)".
template <typename T>
T* checked(T* p, const char* call)
{
  if (__builtin_expect(p == nullptr, 0))
    throw_fatal(call, ": empty handle (never allocated, or already freed)");
  return p;
}

}  // namespace lci::util

#endif  // LCI_UTIL_ERROR_HPP
