// Shared helpers of the single-process unit tests: the fixture that owns the
// global runtime, byte patterns, progress loops with deadlines, an RAII
// environment variable, and a helper that captures a fatal error's message.
#ifndef LCI_TESTS_UNIT_LCI_TEST_COMMON_HPP
#define LCI_TESTS_UNIT_LCI_TEST_COMMON_HPP

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <lci.hpp>
#include <optional>
#include <string>
#include <vector>

extern char** environ;

#ifndef LCI_TEST_BACKEND
#define LCI_TEST_BACKEND "ofi"
#endif

namespace lci_test
{

// The unit tests run as a singleton (rank 0 of 1) without a launcher and
// check the documented attribute defaults, so every binary drops an outer
// launcher's PMI_*/PMIX_* variables (and those that make the bootstrap
// refuse a singleton) and any LCI_ATTR_* override before main()
// (tests that need an override set it themselves with env_guard_t). They
// mean libfabric: LCI_ATTR_BACKEND is pinned to ofi (the default, auto,
// would be the native shm backend for a singleton); a build without the ofi
// backend pins shm instead (LCI_TEST_BACKEND, tests/unit/CMakeLists.txt).
inline bool clean_environment()
{
  std::vector<std::string> names;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("LCI_ATTR_", 0) == 0 || name.rfind("PMI_", 0) == 0 ||
        name.rfind("PMIX_", 0) == 0 || name == "OMPI_COMM_WORLD_SIZE" ||
        name == "SLURM_STEP_NUM_TASKS" || name == "RANK" ||
        name == "WORLD_SIZE" || name.rfind("LCT_", 0) == 0 ||
        name.find("MASTER_ADDR") != std::string::npos)
      names.push_back(name);
  }
  for (const std::string& n : names) ::unsetenv(n.c_str());
  ::setenv("LCI_ATTR_BACKEND", LCI_TEST_BACKEND, 1);
  return true;
}
inline const bool kEnvironmentCleaned = clean_environment();

// Skips a test of packet back-pressure (retry for want of a packet, a
// send held in flight or in the backlog) on the native shm backend, which
// copies every eager message into the peer's ring at once: such a send
// holds no packet and is never in flight.
#define LCI_SKIP_IF_SENDS_COPY()                                          \
  do {                                                                    \
    if (std::string(LCI_TEST_BACKEND) == "shm")                           \
      GTEST_SKIP() << "native shm copies eager sends: no packet is held"; \
  } while (0)

using ::testing::AllOf;
using ::testing::HasSubstr;

// How long a test waits for a message that should arrive at once.
constexpr std::chrono::seconds kWaitLimit{20};

// The fixture: every test runs between g_runtime_init and g_runtime_fina.
class LciTest : public ::testing::Test
{
 protected:
  void SetUp() override
  {
    lci::g_runtime_init();
    ASSERT_FALSE(lci::get_g_runtime().is_empty());
  }
  void TearDown() override
  {
    // a test that finalizes the global runtime must initialize it again
    EXPECT_FALSE(lci::get_g_runtime().is_empty())
        << "the test left the global runtime finalized";
    if (!lci::get_g_runtime().is_empty()) lci::g_runtime_fina();
  }
};

// Sets an environment variable for the lifetime of the object, then restores
// the previous value (or unsets it).
class env_guard_t
{
 public:
  env_guard_t(const char* name, const char* value) : name_(name)
  {
    if (const char* old = std::getenv(name)) old_ = std::string(old);
    ::setenv(name, value, 1);
  }
  ~env_guard_t()
  {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  env_guard_t(const env_guard_t&) = delete;
  env_guard_t& operator=(const env_guard_t&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

inline unsigned char pattern_byte(uint64_t seed, size_t i)
{
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  return static_cast<unsigned char>(x ^ (x >> 17));
}

inline void fill_pattern(void* buf, size_t n, uint64_t seed)
{
  auto* p = static_cast<unsigned char*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] = pattern_byte(seed, i);
}

// Index of the first byte that differs from the pattern, or -1.
inline long first_pattern_mismatch(const void* buf, size_t n, uint64_t seed)
{
  auto* p = static_cast<const unsigned char*>(buf);
  for (size_t i = 0; i < n; ++i)
    if (p[i] != pattern_byte(seed, i)) return static_cast<long>(i);
  return -1;
}

// Calls progress on `device` (the default device when empty) of `runtime`
// until pred() holds; false on timeout.
inline bool progress_until(const std::function<bool()>& pred,
                           lci::device_t device = lci::device_t(),
                           lci::runtime_t runtime = lci::runtime_t(),
                           std::chrono::milliseconds limit = kWaitLimit)
{
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    lci::progress_x().device(device).runtime(runtime)();
  }
  return true;
}

// Pops one status from `cq`, driving progress; a retry status on timeout.
inline lci::status_t pop_wait(lci::comp_t cq,
                              lci::device_t device = lci::device_t(),
                              lci::runtime_t runtime = lci::runtime_t())
{
  lci::status_t s;
  progress_until(
      [&] {
        s = lci::cq_pop(cq);
        return !s.is_retry();
      },
      device, runtime);
  return s;
}

// Calls post() until it returns something other than retry, driving progress
// in between (a non-blocking post may return retry at any time, e.g. the
// first send to a peer while the connection is set up). Returns the last
// status (still retry on timeout).
template <typename F>
lci::status_t post_retry(F&& post, lci::device_t device = lci::device_t(),
                         lci::runtime_t runtime = lci::runtime_t())
{
  auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  lci::status_t s = post();
  while (s.is_retry() && std::chrono::steady_clock::now() < deadline) {
    lci::progress_x().device(device).runtime(runtime)();
    s = post();
  }
  return s;
}

// Drives progress for a while so that anything in flight lands; used before
// checking that a completion object was NOT signalled.
inline void progress_for(std::chrono::milliseconds d,
                         lci::device_t device = lci::device_t(),
                         lci::runtime_t runtime = lci::runtime_t())
{
  auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end)
    lci::progress_x().device(device).runtime(runtime)();
}

// Progress until the device has been quiet (nothing completed) for 2000
// polls in a row: a message sent to self has then reached the matching
// engine.
inline void progress_until_quiet(lci::device_t device = lci::device_t(),
                                 lci::runtime_t runtime = lci::runtime_t())
{
  auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  int quiet = 0;
  while (quiet < 2000 && std::chrono::steady_clock::now() < deadline) {
    lci::error_t e = lci::progress_x().device(device).runtime(runtime)();
    quiet = e.is_done() ? 0 : quiet + 1;
  }
}

// The message of the lci::fatal_error that f() throws; records a test
// failure (and returns a marker) when it throws something else or nothing.
template <typename F>
std::string fatal_message(F&& f)
{
  try {
    f();
  } catch (const lci::fatal_error& e) {
    // fatal_error is a std::runtime_error, as the interface promises
    const std::runtime_error& base = e;
    return base.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-lci exception: " << e.what();
    return "<wrong exception type>";
  } catch (...) {
    ADD_FAILURE() << "threw a non-std exception";
    return "<wrong exception type>";
  }
  ADD_FAILURE() << "expected an lci::fatal_error, nothing was thrown";
  return "<no exception>";
}

// Progress until it throws a fatal_error (an error found in an arriving
// message) and return its message; empty if none within kWaitLimit.
inline std::string progress_until_fatal()
{
  auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      lci::progress();
    } catch (const lci::fatal_error& e) {
      return e.what();
    }
  }
  return "";
}

// Posts a send to self and a blocking receive; checks the payload. Used after
// an error to show that the library still works.
inline void expect_sendrecv_works(lci::runtime_t runtime = lci::runtime_t(),
                                  lci::device_t device = lci::device_t(),
                                  lci::tag_t tag = 4242, size_t size = 100)
{
  std::vector<unsigned char> out(size), in(size + 8, 0);
  fill_pattern(out.data(), size, tag);
  lci::status_t s;
  do {
    s = lci::post_send_x(0, out.data(), size, tag, lci::COMP_NULL)
            .runtime(runtime)
            .device(device)();
  } while (s.is_retry());
  EXPECT_TRUE(s.is_done()) << s.error.get_str();
  lci::status_t r =
      lci::post_recv_x(0, in.data(), in.size(), tag, lci::COMP_NULL)
          .runtime(runtime)
          .device(device)();
  ASSERT_TRUE(r.is_done()) << r.error.get_str();
  EXPECT_EQ(r.size, size);
  EXPECT_EQ(r.tag, tag);
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(first_pattern_mismatch(in.data(), size, tag), -1);
}

}  // namespace lci_test

#endif  // LCI_TESTS_UNIT_LCI_TEST_COMMON_HPP
