// What an idle poll prepares and what it skips, on a one-rank runtime over
// the native shm backend (the process's own ring):
// - the spare active-message buffer (core/progress.cpp): after a small
//   active message took the thread's spare, a progress call that finds
//   nothing to do makes a new one, and the next active message of up to
//   kAmSpareBytes arrives in it (freed with std::free, as any other); a
//   larger one does not take it;
// - the quiet polls of the shm device (net/shm/device.hpp): an idle poll
//   of a device whose one hot ring is empty does not take the consumer
//   lock, and is still counted toward the ring's cool-down, after which
//   the doorbell brings the next message in.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/introspect.hpp"
#include "core/progress.hpp"
#include "lci_test_common.hpp"

namespace
{

class ShmAmIdleTest : public ::testing::Test
{
 protected:
  void SetUp() override
  {
    lci_test::env_guard_t shm("LCI_ATTR_BACKEND", "shm");
    lci::g_runtime_init();
    cq_ = lci::alloc_cq();
    rc_ = lci::register_rcomp(cq_);
  }
  void TearDown() override
  {
    lci::deregister_rcomp(rc_);
    lci::free_comp(&cq_);
    lci::g_runtime_fina();
  }

  // an active message of `size` bytes to this rank, received: its status
  lci::status_t am_to_self(size_t size, unsigned seed)
  {
    std::vector<char> out(size);
    lci_test::fill_pattern(out.data(), size, seed);
    lci::status_t s = lci_test::post_retry([&] {
      return lci::post_am_x(0, out.data(), size, lci::COMP_NULL_RETRY, rc_)();
    });
    EXPECT_TRUE(s.is_done());
    lci::status_t r = lci_test::pop_wait(cq_);
    EXPECT_TRUE(r.is_done());
    EXPECT_EQ(r.size, size);
    EXPECT_EQ(lci_test::first_pattern_mismatch(r.buffer, size, seed), -1);
    return r;
  }

  // the number after `key` in the device's state, -1 when absent
  static long state_number(const std::string& key)
  {
    const std::string s = lci::introspect::net_state();
    const size_t at = s.find(key);
    if (at == std::string::npos) return -1;
    return std::strtol(s.c_str() + at + key.size(), nullptr, 10);
  }

  lci::comp_t cq_;
  lci::rcomp_t rc_;
};

TEST_F(ShmAmIdleTest, IdlePollMakesTheSpareTheNextSmallMessageTakes)
{
  // a thread that has delivered no small active message has no spare
  for (int i = 0; i < 16; ++i) lci::progress();
  EXPECT_EQ(lci::am_spare_of_this_thread(), nullptr);
  std::free(am_to_self(8, 1).buffer);
  // the delivery wanted one: the next idle poll makes it
  ASSERT_TRUE(lci_test::progress_until(
      [] { return lci::am_spare_of_this_thread() != nullptr; }));
  const void* spare = lci::am_spare_of_this_thread();
  lci::status_t r = am_to_self(8, 2);
  EXPECT_EQ(r.buffer, spare);
  EXPECT_EQ(lci::am_spare_of_this_thread(), nullptr);
  std::free(r.buffer);
  // the largest size it serves
  ASSERT_TRUE(lci_test::progress_until(
      [] { return lci::am_spare_of_this_thread() != nullptr; }));
  spare = lci::am_spare_of_this_thread();
  r = am_to_self(lci::kAmSpareBytes, 3);
  EXPECT_EQ(r.buffer, spare);
  std::free(r.buffer);
  // a larger message comes in a buffer of its own and leaves the spare
  ASSERT_TRUE(lci_test::progress_until(
      [] { return lci::am_spare_of_this_thread() != nullptr; }));
  spare = lci::am_spare_of_this_thread();
  r = am_to_self(lci::kAmSpareBytes + 1, 4);
  EXPECT_NE(r.buffer, spare);
  EXPECT_EQ(lci::am_spare_of_this_thread(), spare);
  std::free(r.buffer);
}

TEST_F(ShmAmIdleTest, QuietPollsCountTowardTheRingsCoolDown)
{
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer builds keep every shm poll locked";
#endif
  std::free(am_to_self(8, 5).buffer);
  // the poll that delivered it left them off; the next, which finds
  // nothing, arms them on the hot ring 0
  EXPECT_EQ(state_number(" hot "), 1);
  EXPECT_EQ(state_number("quiet off polls "), 0);
  EXPECT_TRUE(lci::progress().is_retry());
  EXPECT_EQ(state_number("quiet armed polls "), 0);
  EXPECT_EQ(state_number(" ring "), 0);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(lci::progress().is_retry());
  EXPECT_EQ(state_number("quiet armed polls "), 100);
  // they count as the ring's idle polls: it cools down after as many empty
  // polls as without them (1024, or 65,536 with the membarrier)
  long polls = 100;
  while (state_number(" hot ") == 1 && polls < 200000) {
    for (int i = 0; i < 1000; ++i) lci::progress();
    polls += 1000;
  }
  EXPECT_EQ(state_number(" hot "), 0) << lci::introspect::net_state();
  EXPECT_GE(polls, 1024);
  // no ring hot: the quiet polls watch the doorbell word alone
  EXPECT_EQ(state_number(" ring "), -1);
  EXPECT_GE(state_number("quiet armed polls "), 0);
  // and the doorbell brings the next message in
  std::free(am_to_self(8, 6).buffer);
  EXPECT_EQ(state_number(" hot "), 1);
  std::free(am_to_self(64, 7).buffer);
}

}  // namespace
