#include "util/log.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace lci::util
{
namespace
{

const char* const kNames[] = {"off", "warn", "info", "debug", "trace"};

struct sink_t {
  std::mutex mu;
  int rank = -1;
  FILE* file = nullptr;  // the rank's log file, once opened
  bool file_failed = false;
};

sink_t& sink()
{
  // never destroyed: static destructors may still log
  static sink_t* s = new sink_t;
  return *s;
}

int level_from_env()
{
  const char* v = std::getenv("LCI_LOG_LEVEL");
  if (v == nullptr || v[0] == '\0') return static_cast<int>(log_level_t::warn);
  log_level_t level;
  if (parse_log_level(v, &level)) return static_cast<int>(level);
  std::fprintf(stderr,
               "lci: warn: LCI_LOG_LEVEL='%s' is not one of off, warn, info, "
               "debug, trace; using warn\n",
               v);
  return static_cast<int>(log_level_t::warn);
}

// The log file's name for `rank`: "%r" replaced by it, else ".<rank>"
// appended.
std::string file_name(const std::string& pattern, int rank)
{
  const std::string r = std::to_string(rank);
  std::string out;
  bool replaced = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'r') {
      out += r;
      ++i;
      replaced = true;
    } else {
      out += pattern[i];
    }
  }
  return replaced ? out : out + "." + r;
}

}  // namespace

std::atomic<int> g_log_level{level_from_env()};

bool parse_log_level(const std::string& name, log_level_t* out)
{
  for (int i = 0; i < 5; ++i) {
    if (name == kNames[i]) {
      *out = static_cast<log_level_t>(i);
      return true;
    }
  }
  return false;
}

void log_set_rank(int rank)
{
  sink_t& s = sink();
  std::lock_guard<std::mutex> g(s.mu);
  if (s.rank == rank) return;
  s.rank = rank;
  if (s.file) {
    std::fclose(s.file);
    s.file = nullptr;
  }
  s.file_failed = false;
}

void log_write(log_level_t level, const std::string& message)
{
  sink_t& s = sink();
  std::lock_guard<std::mutex> g(s.mu);
  FILE* out = stderr;
  const char* pattern = std::getenv("LCI_LOG_FILE");
  if (pattern != nullptr && pattern[0] != '\0' && s.rank >= 0) {
    if (!s.file && !s.file_failed) {
      const std::string name = file_name(pattern, s.rank);
      s.file = std::fopen(name.c_str(), "a");
      if (!s.file) {
        s.file_failed = true;
        std::fprintf(stderr,
                     "lci[%d] warn: cannot open LCI_LOG_FILE %s; "
                     "logging to stderr\n",
                     s.rank, name.c_str());
      }
    }
    if (s.file) out = s.file;
  }
  if (s.rank >= 0)
    std::fprintf(out, "lci[%d] %s: %s\n", s.rank,
                 kNames[static_cast<int>(level)], message.c_str());
  else
    std::fprintf(out, "lci[pid %d] %s: %s\n", static_cast<int>(getpid()),
                 kNames[static_cast<int>(level)], message.c_str());
  std::fflush(out);
}

}  // namespace lci::util
