// The check of the multi-process tests: CHECK(cond, fmt, ...) prints the
// failed condition, this rank's number and the message, and counts the
// failure; the program exits non-zero when any check failed. Any thread may
// check. Set mp::g_rank once the runtime is up.
#ifndef LCI_TESTS_MULTI_MP_CHECK_HPP
#define LCI_TESTS_MULTI_MP_CHECK_HPP

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <lci.hpp>

namespace mp
{
inline std::atomic<int> g_failures{0};
inline int g_rank = -1;
}  // namespace mp

#define CHECK(cond, ...)                                                      \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "rank %d: check failed: %s: ", mp::g_rank, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                      \
      std::fprintf(stderr, "\n");                                             \
      mp::g_failures.fetch_add(1);                                            \
    }                                                                         \
  } while (0)

namespace mp
{
// The global runtime up and g_rank set; false (with a message naming
// `prog`) unless exactly `n` ranks run.
inline bool init_ranks(const char* prog, int n)
{
  lci::g_runtime_init();
  g_rank = lci::get_rank_me();
  if (lci::get_rank_n() == n) return true;
  std::fprintf(stderr, "%s: run with %d ranks\n", prog, n);
  return false;
}

// A reduction operator of the collective tests: bytes added modulo 256.
inline void add_bytes(const void* l, const void* r, void* d, size_t n)
{
  auto* a = static_cast<const unsigned char*>(l);
  auto* b = static_cast<const unsigned char*>(r);
  auto* o = static_cast<unsigned char*>(d);
  for (size_t i = 0; i < n; ++i) o[i] = static_cast<unsigned char>(a[i] + b[i]);
}

// Posts with `op` (a callable returning lci::status_t) until the post is
// not a retry, making progress in between: on the global runtime's default
// device, or on `dev`.
template <typename Op>
lci::status_t post_retrying(const Op& op)
{
  for (;;) {
    lci::status_t s = op();
    if (!s.is_retry()) return s;
    lci::progress();
  }
}

template <typename Op>
lci::status_t post_retrying(const Op& op, lci::device_t dev)
{
  for (;;) {
    lci::status_t s = op();
    if (!s.is_retry()) return s;
    lci::progress_x().device(dev)();
  }
}

// The exit status of a test once its checks ran: 1, saying how many
// failed, or 0.
inline int exit_status()
{
  const int n = g_failures.load();
  if (n == 0) return 0;
  std::fprintf(stderr, "rank %d: %d failures\n", g_rank, n);
  return 1;
}
}  // namespace mp

#endif  // LCI_TESTS_MULTI_MP_CHECK_HPP
