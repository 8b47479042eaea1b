// Command-line options for the benchmark programs (ours and the MPI twin):
// each option is declared once with its help text, --help prints them all
// with their defaults and exits 0, and a bad option or value prints the
// usage and exits 2. Header-only: the standard library and getopt_long.
//
// Sizes accept K/M/G suffixes (powers of 1024), comma lists ("8,64,1K") and
// geometric ranges "FROM:TO[:FACTOR]" (factor 2 by default), so
// "16:16M:4" is 16, 64, 256, ..., 16M.
#ifndef LCI_BENCHMARKS_COMMON_CLI_HPP
#define LCI_BENCHMARKS_COMMON_CLI_HPP

#include <getopt.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

// the version --version prints (benchmarks/CMakeLists.txt sets it)
#ifndef LCI_BENCH_VERSION
#define LCI_BENCH_VERSION "unknown"
#endif

namespace bench
{

// Parses "123", "4K", "16M", "1G"; false on anything else.
inline bool parse_size(const std::string& s, size_t* out)
{
  if (s.empty() || s[0] == '-') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno || end == s.c_str()) return false;
  std::string suffix(end);
  unsigned long long mult = 1;
  if (suffix == "K" || suffix == "k")
    mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m")
    mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g")
    mult = 1ull << 30;
  else if (!suffix.empty())
    return false;
  *out = static_cast<size_t>(v * mult);
  return true;
}

// Parses a comma list of sizes and FROM:TO[:FACTOR] ranges.
inline bool parse_size_list(const std::string& s, std::vector<size_t>* out)
{
  std::vector<size_t> sizes;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string item =
        s.substr(start, comma == std::string::npos ? comma : comma - start);
    std::vector<std::string> parts;
    size_t p = 0;
    for (;;) {
      size_t colon = item.find(':', p);
      parts.push_back(
          item.substr(p, colon == std::string::npos ? colon : colon - p));
      if (colon == std::string::npos) break;
      p = colon + 1;
    }
    if (parts.size() == 1) {
      size_t v;
      if (!parse_size(parts[0], &v)) return false;
      sizes.push_back(v);
    } else if (parts.size() <= 3) {
      size_t from, to, factor = 2;
      if (!parse_size(parts[0], &from) || !parse_size(parts[1], &to) ||
          (parts.size() == 3 && !parse_size(parts[2], &factor)))
        return false;
      if (from == 0 || factor < 2 || to < from) return false;
      for (size_t v = from; v <= to; v *= factor) sizes.push_back(v);
    } else {
      return false;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (sizes.empty()) return false;
  *out = sizes;
  return true;
}

inline std::string size_list_str(const std::vector<size_t>& v)
{
  std::string s;
  for (size_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

class cli_t
{
 public:
  cli_t(std::string prog, std::string about)
      : prog_(std::move(prog)), about_(std::move(about))
  {
  }

  void flag(const char* name, bool* out, const char* help)
  {
    opts_.push_back({name, "", help, "", [out](const char*) {
                       *out = true;
                       return true;
                     }});
  }
  void add(const char* name, int* out, const char* help)
  {
    opts_.push_back(
        {name, "N", help, std::to_string(*out), [out](const char* v) {
           long x;
           if (!to_long(v, &x)) return false;
           *out = static_cast<int>(x);
           return true;
         }});
  }
  void add(const char* name, long* out, const char* help)
  {
    opts_.push_back({name, "N", help, std::to_string(*out),
                     [out](const char* v) { return to_long(v, out); }});
  }
  void add(const char* name, std::string* out, const char* help,
           std::vector<std::string> choices = {})
  {
    std::string metavar;
    for (auto& c : choices) metavar += (metavar.empty() ? "" : "|") + c;
    opts_.push_back({name, metavar.empty() ? "STR" : metavar, help, *out,
                     [out, choices](const char* v) {
                       if (!choices.empty()) {
                         bool ok = false;
                         for (auto& c : choices) ok = ok || c == v;
                         if (!ok) return false;
                       }
                       *out = v;
                       return true;
                     }});
  }
  void add(const char* name, std::vector<size_t>* out, const char* help)
  {
    opts_.push_back({name, "SIZES", help, size_list_str(*out),
                     [out](const char* v) { return parse_size_list(v, out); }});
  }
  // A custom option (e.g. a size given as one value).
  void add_custom(const char* name, const char* metavar, const char* help,
                  std::string dflt, std::function<bool(const char*)> set)
  {
    opts_.push_back({name, metavar, help, std::move(dflt), std::move(set)});
  }

  // getopt_long over the declared options: "--name value" and
  // "--name=value"; --help and --version; an unknown option, a missing or
  // bad value, or a stray argument ends the program with status 2.
  void parse(int argc, char** argv)
  {
    enum { kHelp = 1, kVersion = 2, kFirst = 256 };
    std::vector<option> longopts;
    for (size_t i = 0; i < opts_.size(); ++i) {
      const std::string& n = opts_[i].name;
      longopts.push_back(
          {n.c_str() + (n.compare(0, 2, "--") == 0 ? 2 : 0),
           opts_[i].metavar.empty() ? no_argument : required_argument, nullptr,
           kFirst + static_cast<int>(i)});
    }
    longopts.push_back({"help", no_argument, nullptr, kHelp});
    longopts.push_back({"version", no_argument, nullptr, kVersion});
    longopts.push_back({nullptr, 0, nullptr, 0});
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts.data(), nullptr)) !=
           -1) {
      if (c == 'h' || c == kHelp) {
        print_help(stdout);
        std::exit(0);
      }
      if (c == kVersion) {
        std::printf("%s (LCI benchmarks) %s\n", prog_.c_str(),
                    LCI_BENCH_VERSION);
        std::exit(0);
      }
      const char* shown = argv[optind - 1];
      if (c == ':') fail(std::string(shown) + " needs a value");
      if (c < kFirst) fail("unknown option '" + std::string(shown) + "'");
      const opt_t& o = opts_[static_cast<size_t>(c - kFirst)];
      if (o.metavar.empty()) {
        o.set(nullptr);
      } else if (!o.set(optarg)) {
        fail("bad value '" + std::string(optarg) + "' for " + o.name + " (" +
             o.metavar + ")");
      }
    }
    if (optind < argc)
      fail("unexpected argument '" + std::string(argv[optind]) + "'");
  }

  void print_help(FILE* f) const
  {
    std::fprintf(f, "usage: %s [options]\n\n%s\n\noptions:\n", prog_.c_str(),
                 about_.c_str());
    for (auto& o : opts_) {
      std::string left = "  " + o.name;
      if (!o.metavar.empty()) left += " " + o.metavar;
      std::fprintf(f, "%-30s %s", left.c_str(), o.help.c_str());
      if (!o.metavar.empty() && !o.dflt.empty())
        std::fprintf(f, " (default %s)", o.dflt.c_str());
      std::fprintf(f, "\n");
    }
    std::fprintf(f, "  %-28s %s\n", "--help", "print this help and exit");
    std::fprintf(f, "  %-28s %s\n", "--version", "print the version and exit");
  }

 private:
  struct opt_t {
    std::string name, metavar, help, dflt;
    std::function<bool(const char*)> set;
  };

  static bool to_long(const char* v, long* out)
  {
    errno = 0;
    char* end = nullptr;
    long x = std::strtol(v, &end, 10);
    if (errno || end == v || *end) return false;
    *out = x;
    return true;
  }

  [[noreturn]] void fail(const std::string& why) const
  {
    std::fprintf(stderr, "%s: %s\n", prog_.c_str(), why.c_str());
    print_help(stderr);
    std::exit(2);
  }

  std::string prog_, about_;
  std::vector<opt_t> opts_;
};

}  // namespace bench

#endif  // LCI_BENCHMARKS_COMMON_CLI_HPP
