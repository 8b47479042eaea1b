// lct.h: the parts of upstream LCI 2's tool library its examples and
// benchmarks use. The PMI wrapper sits on LCI's own bootstrap backend, so
// a program that starts it first and a runtime allocated later see the
// same ranks.
#include "lct.h"

#include <getopt.h>
#include <sched.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"

namespace
{

[[noreturn]] void die(const std::string& msg)
{
  std::fprintf(stderr, "lct: %s\n", msg.c_str());
  std::exit(EXIT_FAILURE);
}

struct arg_t {
  std::string name;
  int has_arg;
  int* ptr;
  std::vector<std::pair<std::string, int>> dict;
};

struct parser_t {
  std::vector<arg_t> args;
  std::string exe;
};

void assign(const arg_t& a, const char* text)
{
  for (const auto& kv : a.dict)
    if (kv.first == text) {
      *a.ptr = kv.second;
      return;
    }
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text, &end, 0);
  if (text[0] == '\0' || *end != '\0' || errno != 0 || v < INT32_MIN ||
      v > INT32_MAX) {
    std::string keys;
    for (const auto& kv : a.dict) keys += (keys.empty() ? "" : ", ") + kv.first;
    die("--" + a.name + " " + text + ": not an integer" +
        (keys.empty() ? std::string() : " nor one of " + keys));
  }
  *a.ptr = static_cast<int>(v);
}

struct tbarrier_t {
  int n;
  std::atomic<int64_t> arrived{0};  // arrivals ever; round k ends at n(k+1)
};

// The PMI wrapper's state: the bootstrap backend while initialized, the
// pairs published since the last barrier and those every rank published.
struct pmi_t {
  std::mutex mu;
  std::shared_ptr<lci::bootstrap::backend_t> backend;
  std::vector<std::pair<std::string, std::string>> pending;
  std::vector<std::map<std::string, std::string>> table;  // by rank
};

pmi_t& pmi()
{
  static pmi_t p;
  return p;
}

lci::bootstrap::backend_t* pmi_backend(const char* call)
{
  lci::bootstrap::backend_t* b = pmi().backend.get();
  if (!b) die(std::string(call) + ": LCT_pmi_initialize was not called");
  return b;
}

void check_string(const char* call, const char* what, const char* s)
{
  if (!s) die(std::string(call) + ": " + what + " is null");
  if (std::strlen(s) >= LCT_PMI_STRING_LIMIT)
    die(std::string(call) + ": " + what + " is longer than " +
        std::to_string(LCT_PMI_STRING_LIMIT - 1) + " bytes");
}

}  // namespace

extern "C" {

void LCT_init(void) {}

void LCT_fina(void)
{
  if (LCT_pmi_initialized()) LCT_pmi_finalize();
}

LCT_args_parser_t LCT_args_parser_alloc(void) { return new parser_t; }

void LCT_args_parser_free(LCT_args_parser_t parser)
{
  delete static_cast<parser_t*>(parser);
}

void LCT_args_parser_add(LCT_args_parser_t parser, const char* name,
                         int has_arg, int* ptr)
{
  LCT_args_parser_add_dict(parser, name, has_arg, ptr, nullptr, 0);
}

void LCT_args_parser_add_dict(LCT_args_parser_t parser, const char* name,
                              int has_arg, int* ptr, LCT_dict_str_int_t dict[],
                              int count)
{
  if (!parser || !name || !ptr)
    die("LCT_args_parser_add: null parser, name or pointer");
  if (has_arg != no_argument && has_arg != required_argument &&
      has_arg != optional_argument)
    die(std::string("LCT_args_parser_add: --") + name + ": has_arg " +
        std::to_string(has_arg) +
        " is not no_argument, required_argument or optional_argument");
  arg_t a{name, has_arg, ptr, {}};
  for (int i = 0; i < count; ++i) a.dict.emplace_back(dict[i].key, dict[i].val);
  static_cast<parser_t*>(parser)->args.push_back(std::move(a));
}

void LCT_args_parser_parse(LCT_args_parser_t parser, int argc, char* argv[])
{
  parser_t* p = static_cast<parser_t*>(parser);
  if (!p) die("LCT_args_parser_parse: null parser");
  p->exe = argc > 0 && argv[0] ? argv[0] : "";
  for (int i = 1; i < argc; ++i) {
    const char* word = argv[i];
    if (std::strncmp(word, "--", 2) != 0 || word[2] == '\0') continue;
    std::string name = word + 2;
    const char* value = nullptr;
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = word + 2 + eq + 1;
      name.resize(eq);
    }
    const arg_t* found = nullptr;
    for (const arg_t& a : p->args)
      if (a.name == name) found = &a;
    if (!found) {
      std::fprintf(stderr, "lct: unknown option --%s (skipped)\n",
                   name.c_str());
      continue;
    }
    if (found->has_arg == no_argument) {
      if (value) die("--" + name + " takes no value");
      *found->ptr = 1;
      continue;
    }
    if (!value && found->has_arg == required_argument) {
      if (i + 1 >= argc) die("--" + name + " needs a value");
      value = argv[++i];
    }
    if (value) assign(*found, value);
  }
}

void LCT_args_parser_print(LCT_args_parser_t parser, bool verbose)
{
  parser_t* p = static_cast<parser_t*>(parser);
  if (!p) die("LCT_args_parser_print: null parser");
  std::string line;
  if (!verbose) line = "ArgsParser: { \"exe\": \"" + p->exe + "\"";
  for (const arg_t& a : p->args) {
    std::string key;
    for (const auto& kv : a.dict)
      if (kv.second == *a.ptr && key.empty()) key = kv.first;
    std::string v = std::to_string(*a.ptr);
    if (verbose)
      std::printf("ArgsParser: %s = %s%s\n", a.name.c_str(), v.c_str(),
                  key.empty() ? "" : ("(" + key + ")").c_str());
    else
      line += ", \"" + a.name + "\": " + (key.empty() ? v : "\"" + key + "\"");
  }
  if (!verbose) std::printf("%s }\n", line.c_str());
}

LCT_tbarrier_t LCT_tbarrier_alloc(int nthreads)
{
  if (nthreads < 1)
    die("LCT_tbarrier_alloc: " + std::to_string(nthreads) +
        " threads (at least 1)");
  tbarrier_t* b = new tbarrier_t;
  b->n = nthreads;
  return b;
}

void LCT_tbarrier_free(LCT_tbarrier_t* tbarrier_p)
{
  if (!tbarrier_p) return;
  delete static_cast<tbarrier_t*>(*tbarrier_p);
  *tbarrier_p = nullptr;
}

int64_t LCT_tbarrier_arrive(LCT_tbarrier_t tbarrier)
{
  tbarrier_t* b = static_cast<tbarrier_t*>(tbarrier);
  // the ticket is the round this arrival belongs to
  return b->arrived.fetch_add(1, std::memory_order_acq_rel) / b->n;
}

bool LCT_tbarrier_test(LCT_tbarrier_t tbarrier, int64_t ticket)
{
  tbarrier_t* b = static_cast<tbarrier_t*>(tbarrier);
  return b->arrived.load(std::memory_order_acquire) >= (ticket + 1) * b->n;
}

void LCT_tbarrier_wait(LCT_tbarrier_t tbarrier, int64_t ticket)
{
  while (!LCT_tbarrier_test(tbarrier, ticket)) sched_yield();
}

void LCT_tbarrier_arrive_and_wait(LCT_tbarrier_t tbarrier)
{
  LCT_tbarrier_wait(tbarrier, LCT_tbarrier_arrive(tbarrier));
}

void LCT_pmi_initialize(void)
{
  pmi_t& s = pmi();
  std::lock_guard<std::mutex> g(s.mu);
  if (s.backend) return;
  try {
    s.backend = lci::bootstrap::get_backend("auto");
  } catch (const std::exception& e) {
    die(std::string("LCT_pmi_initialize: ") + e.what());
  }
  s.table.assign(s.backend->rank_n(), {});
  s.pending.clear();
}

int LCT_pmi_initialized(void)
{
  pmi_t& s = pmi();
  std::lock_guard<std::mutex> g(s.mu);
  return s.backend != nullptr;
}

int LCT_pmi_get_rank(void)
{
  return pmi_backend("LCT_pmi_get_rank")->rank_me();
}

int LCT_pmi_get_size(void) { return pmi_backend("LCT_pmi_get_size")->rank_n(); }

void LCT_pmi_publish(char* key, char* value)
{
  pmi_backend("LCT_pmi_publish");
  check_string("LCT_pmi_publish", "key", key);
  check_string("LCT_pmi_publish", "value", value);
  pmi_t& s = pmi();
  std::lock_guard<std::mutex> g(s.mu);
  s.pending.emplace_back(key, value);
}

void LCT_pmi_getname(int rank, char* key, char* value)
{
  pmi_backend("LCT_pmi_getname");
  check_string("LCT_pmi_getname", "key", key);
  if (!value) die("LCT_pmi_getname: value is null");
  pmi_t& s = pmi();
  std::lock_guard<std::mutex> g(s.mu);
  if (rank < 0 || rank >= static_cast<int>(s.table.size()))
    die("LCT_pmi_getname: rank " + std::to_string(rank) + " of " +
        std::to_string(s.table.size()));
  auto it = s.table[rank].find(key);
  const std::string v = it == s.table[rank].end() ? "" : it->second;
  std::memcpy(value, v.c_str(), v.size() + 1);
}

void LCT_pmi_barrier(void)
{
  lci::bootstrap::backend_t* b = pmi_backend("LCT_pmi_barrier");
  pmi_t& s = pmi();
  std::lock_guard<std::mutex> g(s.mu);
  // each rank's pairs as "key\0value\0...", exchanged in two allgathers
  // (the lengths, then the texts padded to the longest)
  std::string mine;
  for (const auto& kv : s.pending) {
    mine += kv.first;
    mine += '\0';
    mine += kv.second;
    mine += '\0';
  }
  s.pending.clear();
  const int n = b->rank_n();
  try {
    uint64_t len = mine.size();
    std::vector<uint64_t> lens(n);
    b->allgather(&len, lens.data(), sizeof(len));
    uint64_t most = 0;
    for (uint64_t l : lens) most = l > most ? l : most;
    if (most == 0) return;
    mine.resize(most, '\0');
    std::vector<char> all(most * n);
    b->allgather(mine.data(), all.data(), most);
    for (int r = 0; r < n; ++r) {
      const char* p = all.data() + most * r;
      const char* end = p + lens[r];
      while (p < end) {
        std::string k = p;
        p += k.size() + 1;
        std::string v = p;
        p += v.size() + 1;
        s.table[r][k] = v;
      }
    }
  } catch (const std::exception& e) {
    die(std::string("LCT_pmi_barrier: ") + e.what());
  }
}

void LCT_pmi_finalize(void)
{
  pmi_t& s = pmi();
  std::lock_guard<std::mutex> g(s.mu);
  s.backend.reset();
  s.table.clear();
  s.pending.clear();
}

}  // extern "C"
