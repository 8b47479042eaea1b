// Logging: the choices a user needs to see (backend, provider, bootstrap,
// per-peer path, protocol switch points) and warnings, with levels.
//
//   LCI_LOG_LEVEL  off | warn (default) | info | debug | trace
//   LCI_LOG_FILE   a file instead of stderr; "%r" in the name becomes the
//                  rank (without "%r", ".<rank>" is appended); lines logged
//                  before the rank is known go to stderr
//
// A line reads "lci[RANK] LEVEL: message". LCI_LOG(level, ...) costs one
// load and a compare of a relaxed global when the level is off: the
// arguments are not evaluated. Thread-safe: each line is written whole.
#ifndef LCI_UTIL_LOG_HPP
#define LCI_UTIL_LOG_HPP

#include <atomic>
#include <sstream>
#include <string>

namespace lci::util
{

enum class log_level_t : int {
  off = 0,
  warn = 1,
  info = 2,
  debug = 3,
  trace = 4
};

// The level in force (read from LCI_LOG_LEVEL before main; see log.cpp).
extern std::atomic<int> g_log_level;

inline bool log_enabled(log_level_t level)
{
  return g_log_level.load(std::memory_order_relaxed) >= static_cast<int>(level);
}

// Writes one line (no level check: LCI_LOG does it).
void log_write(log_level_t level, const std::string& message);

// Tells the log this process's rank: names the log file and tags lines.
void log_set_rank(int rank);

// Parses a level name; false when it is not one.
bool parse_log_level(const std::string& name, log_level_t* out);

template <typename... Args>
std::string log_concat(Args&&... args)
{
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}

}  // namespace lci::util

#define LCI_LOG(level, ...)                                                \
  do {                                                                     \
    if (__builtin_expect(                                                  \
            ::lci::util::log_enabled(::lci::util::log_level_t::level), 0)) \
      ::lci::util::log_write(::lci::util::log_level_t::level,              \
                             ::lci::util::log_concat(__VA_ARGS__));        \
  } while (0)

#endif  // LCI_UTIL_LOG_HPP
