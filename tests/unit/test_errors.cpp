// Bad input: every case throws lci::fatal_error (a std::runtime_error) whose
// message names the call and the bad value, and the library keeps working
// afterwards (each test ends with a valid send/recv).
#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>

#include "lci_test_common.hpp"

namespace
{

using lci_test::env_guard_t;
using lci_test::expect_sendrecv_works;
using lci_test::fatal_message;
using lci_test::LciTest;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;

// post_send/post_recv/post_am are sugar for post_comm: either name will do.
auto NamesPostCall(const char* sugar)
{
  return AnyOf(HasSubstr(sugar), HasSubstr("post_comm"));
}

std::string pointer_string(const void* p)
{
  std::ostringstream os;
  os << p;
  return os.str();
}

TEST(FatalError, IsARuntimeError)
{
  static_assert(std::is_base_of<std::runtime_error, lci::fatal_error>::value,
                "fatal_error derives from std::runtime_error");
  lci::peer_failure_error e("peer 3 failed", 3);
  EXPECT_EQ(e.failed_rank(), 3);
  EXPECT_STREQ(e.what(), "peer 3 failed");
}

TEST_F(LciTest, RankOutOfRange)
{
  char buf[8] = {};
  for (int rank : {5, -3, 1}) {
    SCOPED_TRACE(rank);
    std::string msg = fatal_message(
        [&] { lci::post_send(rank, buf, sizeof(buf), 1, lci::COMP_NULL); });
    EXPECT_THAT(msg, NamesPostCall("post_send"));
    EXPECT_THAT(msg, HasSubstr("rank " + std::to_string(rank)));
    msg = fatal_message(
        [&] { lci::post_recv(rank, buf, sizeof(buf), 1, lci::COMP_NULL); });
    EXPECT_THAT(msg, NamesPostCall("post_recv"));
    EXPECT_THAT(msg, HasSubstr("rank " + std::to_string(rank)));
  }
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  std::string msg = fatal_message(
      [&] { lci::post_am(7, buf, sizeof(buf), lci::COMP_NULL, rc); });
  EXPECT_THAT(msg, AllOf(NamesPostCall("post_am"), HasSubstr("rank 7")));
  // ANY_SOURCE is not a destination
  msg = fatal_message([&] {
    lci::post_send(lci::ANY_SOURCE, buf, sizeof(buf), 1, lci::COMP_NULL);
  });
  EXPECT_THAT(msg, HasSubstr("rank -1"));
  // nothing was sent to the completion queue by the failed calls
  lci_test::progress_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::deregister_rcomp(rc);
  lci::free_comp(&cq);
  expect_sendrecv_works();
}

TEST_F(LciTest, NullBufferWithNonZeroSize)
{
  std::string msg =
      fatal_message([] { lci::post_send(0, nullptr, 8, 1, lci::COMP_NULL); });
  EXPECT_THAT(msg, NamesPostCall("post_send"));
  EXPECT_THAT(msg, HasSubstr("null buffer"));
  EXPECT_THAT(msg, HasSubstr("size 8"));
  lci::comp_t cq = lci::alloc_cq();
  msg = fatal_message([&] { lci::post_recv(0, nullptr, 33, 1, cq); });
  EXPECT_THAT(msg, AllOf(NamesPostCall("post_recv"), HasSubstr("33")));
  lci::free_comp(&cq);
  expect_sendrecv_works();
}

// A size that no buffer can have (a negative length cast to size_t):
// refused by every kind of post before anything is sent.
TEST_F(LciTest, NegativeOrOversizeLength)
{
  std::vector<char> buf(100);
  const size_t negative = static_cast<size_t>(-5);
  std::string msg = fatal_message(
      [&] { lci::post_send(0, buf.data(), negative, 1, lci::COMP_NULL); });
  EXPECT_THAT(msg, AllOf(NamesPostCall("post_send"),
                         HasSubstr(std::to_string(negative))));
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  msg = fatal_message(
      [&] { lci::post_am(0, buf.data(), negative, lci::COMP_NULL, rc); });
  EXPECT_THAT(msg, AllOf(NamesPostCall("post_am"), HasSubstr("negative")));
  msg = fatal_message(
      [&] { lci::post_recv(0, buf.data(), negative, 1, lci::COMP_NULL); });
  EXPECT_THAT(msg, AllOf(NamesPostCall("post_recv"), HasSubstr("negative")));
  // put / get longer than the remote region
  lci::mr_t mr = lci::register_memory(buf.data(), buf.size());
  lci::rmr_t rmr = lci::get_rmr(mr);
  msg = fatal_message([&] {
    lci::post_put(0, buf.data(), buf.size() + 1, lci::COMP_NULL, 0, rmr);
  });
  EXPECT_THAT(msg, AllOf(NamesPostCall("post_put"), HasSubstr("101"),
                         HasSubstr("100-byte")));
  msg = fatal_message(
      [&] { lci::post_get(0, buf.data(), 10, lci::COMP_NULL, 95, rmr); });
  EXPECT_THAT(msg, AllOf(NamesPostCall("post_get"), HasSubstr("95"),
                         HasSubstr("outside")));
  msg = fatal_message(
      [&] { lci::post_get(0, buf.data(), negative, lci::COMP_NULL, 0, rmr); });
  EXPECT_THAT(msg, AllOf(NamesPostCall("post_get"), HasSubstr("negative")));
  lci::deregister_memory(&mr);
  lci::deregister_rcomp(rc);
  lci::free_comp(&cq);
  expect_sendrecv_works();
}

TEST_F(LciTest, TagAboveMaxTag)
{
  char buf[4] = {};
  // with the default max_tag only ANY_TAG is above it
  std::string msg = fatal_message(
      [&] { lci::post_send(0, buf, 4, lci::ANY_TAG, lci::COMP_NULL); });
  EXPECT_THAT(msg, NamesPostCall("post_send"));
  EXPECT_THAT(msg, HasSubstr(std::to_string(lci::ANY_TAG)));

  lci::runtime_t rt = lci::alloc_runtime_x().max_tag(1000)();
  msg = fatal_message(
      [&] { lci::post_send_x(0, buf, 4, 1001, lci::COMP_NULL).runtime(rt)(); });
  EXPECT_THAT(msg, AllOf(NamesPostCall("post_send"), HasSubstr("1001"),
                         HasSubstr("max_tag")));
  lci::comp_t cq = lci::alloc_cq();
  msg = fatal_message(
      [&] { lci::post_recv_x(0, buf, 4, 5000, cq).runtime(rt)(); });
  EXPECT_THAT(msg, AllOf(NamesPostCall("post_recv"), HasSubstr("5000")));
  // max_tag itself is allowed
  expect_sendrecv_works(rt, lci::device_t(), 1000);
  lci::free_comp(&cq);
  lci::free_runtime(&rt);
  expect_sendrecv_works();
}

TEST_F(LciTest, ReceiveWithRemoteComp)
{
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  char buf[16];
  std::string msg = fatal_message([&] {
    lci::post_comm_x(lci::direction_t::IN, 0, buf, sizeof(buf), cq)
        .remote_comp(rc)
        .tag(3)();
  });
  EXPECT_THAT(msg, HasSubstr("post_comm"));
  EXPECT_THAT(msg, HasSubstr("remote_comp " + std::to_string(rc)));
  msg = fatal_message([&] {
    lci::post_comm_x(lci::direction_t::IN, 0, buf, sizeof(buf), lci::COMP_NULL)
        .remote_comp(4321)();
  });
  EXPECT_THAT(msg, AllOf(HasSubstr("post_comm"), HasSubstr("4321")));
  // no half-posted receive remains: a send with tag 3 is not swallowed
  char out[16] = "not swallowed";
  ASSERT_TRUE(lci::post_send(0, out, sizeof(out), 3, lci::COMP_NULL).is_done());
  lci::status_t r = lci::post_recv(0, buf, sizeof(buf), 3, lci::COMP_NULL);
  ASSERT_TRUE(r.is_done());
  EXPECT_STREQ(buf, "not swallowed");
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::deregister_rcomp(rc);
  lci::free_comp(&cq);
  expect_sendrecv_works();
}

TEST_F(LciTest, UnknownProviderInEnvironment)
{
  {
    env_guard_t e("LCI_ATTR_OFI_PROVIDER_NAME", "bogus");
    std::string msg = fatal_message([] { lci::alloc_runtime(); });
    EXPECT_THAT(msg, HasSubstr("alloc_runtime"));
    EXPECT_THAT(msg, HasSubstr("LCI_ATTR_OFI_PROVIDER_NAME"));
    EXPECT_THAT(msg, HasSubstr("bogus"));
    // resources that do not read the variable are unaffected
    lci::device_t d = lci::alloc_device();
    expect_sendrecv_works(lci::runtime_t(), d);
    lci::free_device(&d);
  }
  // the same through g_runtime_init, once the global runtime is gone
  lci::g_runtime_fina();
  {
    env_guard_t e("LCI_ATTR_OFI_PROVIDER_NAME", "bogus");
    std::string msg = fatal_message([] { lci::g_runtime_init(); });
    EXPECT_THAT(msg, AllOf(HasSubstr("g_runtime_init"), HasSubstr("bogus")));
    EXPECT_TRUE(lci::get_g_runtime().is_empty());
  }
  lci::g_runtime_init();
  expect_sendrecv_works();
}

TEST_F(LciTest, BadNumberInEnvironment)
{
  {
    env_guard_t e("LCI_ATTR_NET_MAX_RECVS", "abc");
    std::string msg = fatal_message([] { lci::alloc_device(); });
    EXPECT_THAT(msg, HasSubstr("alloc_device"));
    EXPECT_THAT(msg, HasSubstr("LCI_ATTR_NET_MAX_RECVS"));
    EXPECT_THAT(msg, HasSubstr("abc"));
    // a runtime allocates a default device, so it fails the same way
    msg = fatal_message([] { lci::alloc_runtime(); });
    EXPECT_THAT(msg,
                AllOf(HasSubstr("LCI_ATTR_NET_MAX_RECVS"), HasSubstr("abc")));
    EXPECT_THAT(msg,
                AnyOf(HasSubstr("alloc_runtime"), HasSubstr("alloc_device")));
    // the existing resources keep working while the variable is bad
    expect_sendrecv_works();
  }
  {
    env_guard_t e("LCI_ATTR_PACKET_SIZE", "-4096");
    std::string msg = fatal_message([] { lci::alloc_runtime(); });
    EXPECT_THAT(msg,
                AllOf(HasSubstr("alloc_runtime"),
                      HasSubstr("LCI_ATTR_PACKET_SIZE"), HasSubstr("-4096")));
  }
  {
    env_guard_t e("LCI_ATTR_ALLOC_DEFAULT_DEVICE", "maybe");
    std::string msg = fatal_message([] { lci::alloc_runtime(); });
    EXPECT_THAT(msg, AllOf(HasSubstr("alloc_runtime"), HasSubstr("maybe")));
  }
  {
    env_guard_t e("LCI_ATTR_THRESHOLD", "2x");
    std::string msg = fatal_message([] { lci::alloc_sync(); });
    EXPECT_THAT(msg, AllOf(HasSubstr("alloc_sync"), HasSubstr("2x")));
  }
  // all variables restored: allocation works again
  lci::device_t d = lci::alloc_device();
  EXPECT_EQ(d.get_attr_net_max_recvs(), 256u);
  lci::free_device(&d);
  expect_sendrecv_works();
}

TEST_F(LciTest, BadAttributeValues)
{
  std::string msg = fatal_message([] { lci::alloc_sync_x().threshold(0)(); });
  EXPECT_THAT(msg, AllOf(HasSubstr("alloc_sync"), HasSubstr("threshold 0")));
  msg =
      fatal_message([] { lci::alloc_matching_engine_x().num_buckets(1000)(); });
  EXPECT_THAT(msg,
              AllOf(HasSubstr("alloc_matching_engine"), HasSubstr("1000")));
  msg = fatal_message([] { lci::alloc_packet_pool_x().packet_size(12)(); });
  EXPECT_THAT(msg, AllOf(HasSubstr("alloc_packet_pool"), HasSubstr("12")));
  msg = fatal_message([] { lci::alloc_device_x().net_max_sends(0)(); });
  EXPECT_THAT(msg,
              AllOf(HasSubstr("alloc_device"), HasSubstr("net_max_sends")));
  msg = fatal_message([] { lci::alloc_runtime_x().max_tag(lci::ANY_TAG)(); });
  EXPECT_THAT(msg, AllOf(HasSubstr("alloc_runtime"), HasSubstr("max_tag")));
#if LCI_TEST_HAVE_OFI
  // (only the ofi backend opens a provider: native shm never asks for one)
  msg = fatal_message(
      [] { lci::alloc_runtime_x().ofi_provider_name("nonexistent")(); });
  EXPECT_THAT(msg, AllOf(HasSubstr("alloc_runtime"), HasSubstr("nonexistent")));
#endif
  expect_sendrecv_works();
}

TEST_F(LciTest, FreeDeviceTwice)
{
  lci::device_t d = lci::alloc_device();
  lci::device_t copy = d;
  const std::string addr = pointer_string(d.get_impl());
  lci::free_device(&d);
  EXPECT_TRUE(d.is_empty());
  // the same handle again: it was cleared
  std::string msg = fatal_message([&] { lci::free_device(&d); });
  EXPECT_THAT(msg, AllOf(HasSubstr("free_device"), HasSubstr("empty handle")));
  // a copy still holds the old pointer: the library knows it is gone
  msg = fatal_message([&] { lci::free_device(&copy); });
  EXPECT_THAT(msg, AllOf(HasSubstr("free_device"), HasSubstr(addr),
                         HasSubstr("already freed")));
  msg = fatal_message([] { lci::free_device(nullptr); });
  EXPECT_THAT(msg, AllOf(HasSubstr("free_device"), HasSubstr("null")));
  expect_sendrecv_works();
}

TEST_F(LciTest, FreeCompTwice)
{
  lci::comp_t types[] = {lci::alloc_cq(), lci::alloc_sync(),
                         lci::alloc_counter(),
                         lci::alloc_handler([](lci::status_t) {})};
  for (lci::comp_t& c : types) {
    lci::comp_t copy = c;
    const std::string addr = pointer_string(c.get_impl());
    lci::free_comp(&c);
    EXPECT_TRUE(c.is_empty());
    std::string msg = fatal_message([&] { lci::free_comp(&c); });
    EXPECT_THAT(msg, AllOf(HasSubstr("free_comp"), HasSubstr("empty handle")));
    msg = fatal_message([&] { lci::free_comp(&copy); });
    EXPECT_THAT(msg, AllOf(HasSubstr("free_comp"), HasSubstr(addr),
                           HasSubstr("already freed")));
  }
  lci::comp_t retry = lci::COMP_NULL_RETRY;
  std::string msg = fatal_message([&] { lci::free_comp(&retry); });
  EXPECT_THAT(msg, AllOf(HasSubstr("free_comp"), HasSubstr("COMP_NULL_RETRY")));
  expect_sendrecv_works();
}

TEST_F(LciTest, FreeRuntimeTwice)
{
  lci::runtime_t rt = lci::alloc_runtime();
  lci::runtime_t copy = rt;
  const std::string addr = pointer_string(rt.get_impl());
  lci::free_runtime(&rt);
  EXPECT_TRUE(rt.is_empty());
  std::string msg = fatal_message([&] { lci::free_runtime(&rt); });
  EXPECT_THAT(msg, AllOf(HasSubstr("free_runtime"), HasSubstr("empty handle")));
  msg = fatal_message([&] { lci::free_runtime(&copy); });
  EXPECT_THAT(msg, AllOf(HasSubstr("free_runtime"), HasSubstr(addr),
                         HasSubstr("already freed")));
  // attributes of an empty handle
  msg = fatal_message([&] { rt.get_attr_packet_size(); });
  EXPECT_THAT(msg, HasSubstr("get_attr_packet_size"));
  expect_sendrecv_works();
}

TEST_F(LciTest, FreeOtherResourcesTwice)
{
  lci::packet_pool_t p = lci::alloc_packet_pool();
  lci::packet_pool_t pcopy = p;
  const std::string paddr = pointer_string(p.get_impl());
  lci::free_packet_pool(&p);
  std::string msg = fatal_message([&] { lci::free_packet_pool(&pcopy); });
  EXPECT_THAT(msg, AllOf(HasSubstr("free_packet_pool"), HasSubstr(paddr)));
  lci::matching_engine_t me = lci::alloc_matching_engine();
  lci::matching_engine_t mcopy = me;
  const std::string maddr = pointer_string(me.get_impl());
  lci::free_matching_engine(&me);
  msg = fatal_message([&] { lci::free_matching_engine(&mcopy); });
  EXPECT_THAT(msg, AllOf(HasSubstr("free_matching_engine"), HasSubstr(maddr)));
  // a pool that still feeds a device cannot be freed
  lci::packet_pool_t used = lci::alloc_packet_pool_x().npackets(64)();
  lci::device_t d = lci::alloc_device_x().packet_pool(used).net_max_recvs(8)();
  msg = fatal_message([&] { lci::free_packet_pool(&used); });
  EXPECT_THAT(msg, AllOf(HasSubstr("free_packet_pool"), HasSubstr("device")));
  expect_sendrecv_works(lci::runtime_t(), d);
  lci::free_device(&d);
  lci::free_packet_pool(&used);
  EXPECT_TRUE(used.is_empty());
  expect_sendrecv_works();
}

TEST_F(LciTest, GlobalRuntimeFinaTwice)
{
  lci::g_runtime_fina();
  std::string msg = fatal_message([] { lci::g_runtime_fina(); });
  EXPECT_THAT(msg,
              AllOf(HasSubstr("g_runtime_fina"), HasSubstr("not initialized")));
  // calls that need the global runtime say that there is none
  char c = 0;
  msg = fatal_message([&] { lci::post_send(0, &c, 1, 1, lci::COMP_NULL); });
  EXPECT_THAT(msg, AllOf(NamesPostCall("post_send"), HasSubstr("no runtime")));
  lci::g_runtime_init();
  expect_sendrecv_works();
}

// Not an error (upstream LCI warns and keeps the runtime): the same runtime,
// a warning, and one more g_runtime_fina to match (test_compat.cpp has the
// whole cycle). The warning goes through the log: a line of rank 0 at level
// warn, none when the run sets LCI_LOG_LEVEL=off (the ctest
// unit.errors.GlobalRuntimeInitTwice_log_off).
TEST_F(LciTest, GlobalRuntimeInitTwice)
{
  lci::runtime_t before = lci::get_g_runtime();
  ::testing::internal::CaptureStderr();
  lci::runtime_t again = lci::g_runtime_init();
  std::string warning = ::testing::internal::GetCapturedStderr();
  const char* level = std::getenv("LCI_LOG_LEVEL");
  if (level && std::string(level) == "off")
    EXPECT_EQ(warning, "");
  else
    EXPECT_THAT(warning, HasSubstr("lci[0] warn: g_runtime_init: the global "
                                   "runtime is already initialized"));
  EXPECT_EQ(again, before);
  lci::g_runtime_fina();
  // the global runtime is the same one and still works
  EXPECT_EQ(lci::get_g_runtime(), before);
  expect_sendrecv_works();
}

TEST_F(LciTest, CompOfTheWrongKind)
{
  lci::comp_t cq = lci::alloc_cq();
  const std::string addr = pointer_string(cq.get_impl());
  std::string msg = fatal_message([&] { lci::sync_test(cq, nullptr); });
  EXPECT_THAT(msg, AllOf(HasSubstr("sync_test"), HasSubstr(addr),
                         HasSubstr("synchronizer")));
  msg = fatal_message([&] { lci::sync_wait(cq, nullptr); });
  EXPECT_THAT(msg, AllOf(HasSubstr("sync_wait"), HasSubstr(addr)));
  lci::comp_t sync = lci::alloc_sync();
  msg = fatal_message([&] { lci::cq_pop(sync); });
  EXPECT_THAT(msg, AllOf(HasSubstr("cq_pop"),
                         HasSubstr(pointer_string(sync.get_impl()))));
  msg = fatal_message([&] { lci::counter_get(cq); });
  EXPECT_THAT(msg, HasSubstr("counter_get"));
  msg = fatal_message([&] { lci::counter_set(sync, 1); });
  EXPECT_THAT(msg, HasSubstr("counter_set"));
  msg = fatal_message([&] { lci::cq_pop(lci::comp_t()); });
  EXPECT_THAT(msg, AllOf(HasSubstr("cq_pop"), HasSubstr("empty")));
  msg =
      fatal_message([&] { lci::comp_signal(lci::COMP_NULL, lci::status_t()); });
  EXPECT_THAT(msg, HasSubstr("comp_signal"));
  // the objects are unharmed
  lci::comp_signal(cq, lci::status_t(lci::errorcode_t::done));
  EXPECT_TRUE(lci::cq_pop(cq).is_done());
  lci::comp_signal(sync, lci::status_t(lci::errorcode_t::done));
  EXPECT_TRUE(lci::sync_test(sync, nullptr));
  lci::free_comp(&sync);
  lci::free_comp(&cq);
  expect_sendrecv_works();
}

TEST_F(LciTest, ReceiveNeedsACompletionObject)
{
  char buf[4];
  std::string msg = fatal_message(
      [&] { lci::post_recv(0, buf, sizeof(buf), 1, lci::COMP_NULL_RETRY); });
  EXPECT_THAT(msg,
              AllOf(NamesPostCall("post_recv"), HasSubstr("COMP_NULL_RETRY")));
  expect_sendrecv_works();
}

TEST_F(LciTest, MessageLargerThanReceiveBuffer)
{
  std::vector<char> out(100, 'x'), small(10);
  // unexpected message, then a receive that is too small
  ASSERT_TRUE(
      lci::post_send(0, out.data(), out.size(), 8, lci::COMP_NULL).is_done());
  lci_test::progress_until_quiet();
  lci::comp_t cq = lci::alloc_cq();
  std::string msg = fatal_message(
      [&] { lci::post_recv(0, small.data(), small.size(), 8, cq); });
  EXPECT_THAT(msg, AllOf(NamesPostCall("post_recv"), HasSubstr("100"),
                         HasSubstr("10-byte")));
  // the receive posted first: the error comes out of progress
  ASSERT_TRUE(lci::post_recv(0, small.data(), small.size(), 9, cq).is_posted());
  ASSERT_TRUE(
      lci::post_send(0, out.data(), out.size(), 9, lci::COMP_NULL).is_done());
  msg = lci_test::progress_until_fatal();
  EXPECT_THAT(msg, AllOf(HasSubstr("100"), HasSubstr("10-byte")));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::free_comp(&cq);
  expect_sendrecv_works();
}

TEST_F(LciTest, ActiveMessageToUnregisteredRcomp)
{
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  lci::deregister_rcomp(rc);
  std::string msg = fatal_message([&] { lci::deregister_rcomp(rc); });
  EXPECT_THAT(
      msg, AllOf(HasSubstr("deregister_rcomp"), HasSubstr(std::to_string(rc))));
  char c = 'z';
  ASSERT_TRUE(lci::post_am(0, &c, 1, lci::COMP_NULL, rc).is_done());
  msg = lci_test::progress_until_fatal();
  EXPECT_THAT(msg, AllOf(HasSubstr("progress"), HasSubstr("not registered"),
                         HasSubstr(std::to_string(rc))));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::free_comp(&cq);
  expect_sendrecv_works();
}

// An error raised by progress inside a blocking receive (here: another,
// bad, message arriving) leaves the call with an exception. The receive must
// not stay behind, tied to the call's finished wait: the next message with
// its tag has to reach a new receive, not the abandoned one.
TEST_F(LciTest, BlockingReceiveInterruptedByError)
{
  expect_sendrecv_works();  // connection set up
  lci::comp_t dead = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(dead);
  lci::deregister_rcomp(rc);
  char c = 'z';
  ASSERT_TRUE(lci::post_am(0, &c, 1, lci::COMP_NULL, rc).is_done());
  std::vector<unsigned char> abandoned(32, 0);
  std::string msg = fatal_message([&] {
    lci::post_recv(0, abandoned.data(), abandoned.size(), 77, lci::COMP_NULL);
  });
  EXPECT_THAT(msg, HasSubstr("not registered"));

  std::vector<unsigned char> out(32), in(32, 0);
  lci_test::fill_pattern(out.data(), out.size(), 77);
  ASSERT_TRUE(
      lci::post_send(0, out.data(), out.size(), 77, lci::COMP_NULL).is_done());
  lci_test::progress_until_quiet();
  lci::comp_t cq = lci::alloc_cq();
  lci::status_t r = lci::post_recv(0, in.data(), in.size(), 77, cq);
  if (r.is_posted()) r = lci_test::pop_wait(cq);
  ASSERT_TRUE(r.is_done()) << "the message went to the abandoned receive";
  EXPECT_EQ(r.buffer, in.data());
  EXPECT_EQ(lci_test::first_pattern_mismatch(in.data(), in.size(), 77), -1);
  EXPECT_EQ(std::count(abandoned.begin(), abandoned.end(), 0), 32)
      << "the abandoned receive buffer was written";
  lci::free_comp(&cq);
  lci::free_comp(&dead);
  expect_sendrecv_works();
}

// A valid put and get still work (after an error).
void expect_rma_works()
{
  std::vector<unsigned char> region(300, 0), out(300), back(300, 0);
  lci_test::fill_pattern(out.data(), out.size(), 300);
  lci::mr_t mr = lci::register_memory(region.data(), region.size());
  lci::rmr_t rmr = lci::get_rmr(mr);
  ASSERT_TRUE(lci::post_put(0, out.data(), out.size(), lci::COMP_NULL, 0, rmr)
                  .is_done());
  EXPECT_EQ(lci_test::first_pattern_mismatch(region.data(), 300, 300), -1);
  ASSERT_TRUE(
      lci::post_get(0, back.data(), 200, lci::COMP_NULL, 100, rmr).is_done());
  EXPECT_TRUE(std::equal(back.begin(), back.begin() + 200, out.begin() + 100));
  lci::deregister_memory(&mr);
}

// Put, put with signal and get with signal to a region that is not (or no
// longer) registered, or with an rmr of another runtime or another rank:
// refused by the posting call, nothing is moved.
TEST_F(LciTest, BadRmr)
{
  std::vector<char> region(256, 'r'), buf(64, 'b');
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  auto put = [&](const lci::rmr_t& rmr) {
    return fatal_message([&] {
      lci::post_put(0, buf.data(), buf.size(), lci::COMP_NULL, 0, rmr);
    });
  };
  auto put_signal = [&](const lci::rmr_t& rmr) {
    return fatal_message([&] {
      lci::post_put_x(0, buf.data(), buf.size(), lci::COMP_NULL, 0, rmr)
          .remote_comp(rc)();
    });
  };
  auto get_signal = [&](const lci::rmr_t& rmr) {
    return fatal_message([&] {
      lci::post_get_x(0, buf.data(), buf.size(), lci::COMP_NULL, 0, rmr)
          .remote_comp(rc)();
    });
  };

  // deregistered
  lci::mr_t mr = lci::register_memory(region.data(), region.size());
  lci::rmr_t stale = lci::get_rmr(mr);
  lci::deregister_memory(&mr);
  EXPECT_TRUE(mr.is_empty());
  for (const std::string& msg :
       {put(stale), put_signal(stale), get_signal(stale)})
    EXPECT_THAT(msg, AllOf(HasSubstr("post_comm"),
                           HasSubstr(std::to_string(stale.opaque_rkey)),
                           HasSubstr("deregistered")));
  // never registered: a made-up rmr
  lci::rmr_t made_up;
  made_up.base = reinterpret_cast<uintptr_t>(region.data());
  made_up.size = region.size();
  made_up.opaque_rkey = 12345;
  made_up.rank = 0;
  made_up.runtime = 777;
  for (const std::string& msg :
       {put(made_up), put_signal(made_up), get_signal(made_up)})
    EXPECT_THAT(msg, AllOf(HasSubstr("post_comm"), HasSubstr("777"),
                           HasSubstr("not made by get_rmr")));
  // another runtime's region
  lci::runtime_t rt2 = lci::alloc_runtime();
  lci::mr_t mr2 =
      lci::register_memory_x(region.data(), region.size()).runtime(rt2)();
  lci::rmr_t foreign = lci::get_rmr(mr2);
  EXPECT_NE(foreign.runtime, 0u);
  for (const std::string& msg :
       {put(foreign), put_signal(foreign), get_signal(foreign)})
    EXPECT_THAT(msg, AllOf(HasSubstr("post_comm"),
                           HasSubstr(std::to_string(foreign.runtime)),
                           HasSubstr("this runtime")));
  lci::deregister_memory(&mr2);
  lci::free_runtime(&rt2);
  // another rank's region
  mr = lci::register_memory(region.data(), region.size());
  lci::rmr_t other = lci::get_rmr(mr);
  other.rank = 3;
  EXPECT_THAT(put(other), AllOf(HasSubstr("rank 3"), HasSubstr("rank 0")));
  // nothing was written, nobody was signalled
  EXPECT_EQ(std::count(region.begin(), region.end(), 'r'), 256);
  lci_test::progress_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry());
  lci::deregister_memory(&mr);
  lci::deregister_rcomp(rc);
  lci::free_comp(&cq);
  expect_rma_works();
  expect_sendrecv_works();
}

TEST_F(LciTest, MemoryRegistrationMisuse)
{
  std::vector<char> region(128), other(128);
  std::string msg = fatal_message([&] { lci::register_memory(nullptr, 10); });
  EXPECT_THAT(msg, AllOf(HasSubstr("register_memory"), HasSubstr("null")));
  lci::mr_t mr = lci::register_memory(region.data(), region.size());
  lci::mr_t copy = mr;
  // a local buffer outside the mr given with .mr()
  lci::rmr_t rmr = lci::get_rmr(mr);
  msg = fatal_message([&] {
    lci::post_put_x(0, other.data(), 16, lci::COMP_NULL, 0, rmr).mr(mr)();
  });
  EXPECT_THAT(msg, AllOf(HasSubstr("post_comm"), HasSubstr("not inside")));
  lci::deregister_memory(&mr);
  msg = fatal_message([&] { lci::deregister_memory(&copy); });
  EXPECT_THAT(
      msg, AllOf(HasSubstr("deregister_memory"), HasSubstr("not allocated")));
  msg = fatal_message([&] { lci::get_rmr(copy); });
  EXPECT_THAT(msg, AllOf(HasSubstr("get_rmr"), HasSubstr("not allocated")));
  msg = fatal_message([&] { lci::deregister_memory(&mr); });
  EXPECT_THAT(msg, AllOf(HasSubstr("deregister_memory"), HasSubstr("empty")));
  // a region left registered goes with its runtime
  lci::runtime_t rt2 = lci::alloc_runtime();
  lci::mr_t left = lci::register_memory_x(region.data(), 64).runtime(rt2)();
  lci::free_runtime(&rt2);
  msg = fatal_message([&] { lci::deregister_memory(&left); });
  EXPECT_THAT(msg, HasSubstr("not allocated"));
  expect_rma_works();
}

// A rendezvous message larger than the receive buffer: the receiver's
// progress (or post_recv, when the message waited) reports it, and the
// sender, told by the receiver, gives the message up and reports it too.
TEST_F(LciTest, RendezvousMessageLargerThanReceiveBuffer)
{
  const size_t big = lci::get_max_bcopy_size() * 4;
  std::vector<char> out(big, 'x'), small(1000);
  lci::comp_t cq = lci::alloc_cq();
  // receive posted first
  ASSERT_TRUE(lci::post_recv(0, small.data(), small.size(), 8, cq).is_posted());
  lci::status_t s = lci_test::post_retry(
      [&] { return lci::post_send(0, out.data(), big, 8, cq); });
  ASSERT_TRUE(s.is_posted()) << s.error.get_str();
  std::string first = lci_test::progress_until_fatal();
  std::string second = lci_test::progress_until_fatal();
  EXPECT_THAT(first,
              AllOf(HasSubstr(std::to_string(big)), HasSubstr("1000-byte")));
  EXPECT_THAT(second, AllOf(HasSubstr("refused"), HasSubstr("1000-byte")));
  // the message waited (unexpected): post_recv reports it
  s = lci_test::post_retry(
      [&] { return lci::post_send(0, out.data(), big, 9, cq); });
  ASSERT_TRUE(s.is_posted());
  lci_test::progress_until_quiet();
  std::string msg = fatal_message(
      [&] { lci::post_recv(0, small.data(), small.size(), 9, cq); });
  EXPECT_THAT(
      msg, AllOf(NamesPostCall("post_recv"), HasSubstr(std::to_string(big))));
  EXPECT_THAT(lci_test::progress_until_fatal(), HasSubstr("refused"));
  lci_test::progress_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(lci::cq_pop(cq).is_retry()) << "a refused message signalled";
  lci::free_comp(&cq);
  expect_sendrecv_works();
  // and a rendezvous message that fits
  std::vector<char> in(big);
  lci::comp_t sync = lci::alloc_sync_x().threshold(2)();
  ASSERT_TRUE(lci::post_recv(0, in.data(), big, 10, sync).is_posted());
  ASSERT_TRUE(lci_test::post_retry([&] {
                return lci::post_send(0, out.data(), big, 10, sync);
              }).is_posted());
  lci::sync_wait(sync, nullptr);
  EXPECT_EQ(in, out);
  lci::free_comp(&sync);
}

// A put with signal or an active message above the eager limit to a remote
// completion that is not registered: the target's progress reports it, and
// the initiator is told (the small put's ack, the rendezvous FIN).
TEST_F(LciTest, SignalToUnregisteredRcomp)
{
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  lci::deregister_rcomp(rc);
  std::vector<char> region(64), buf(64, 's');
  lci::mr_t mr = lci::register_memory(region.data(), region.size());
  lci::status_t s = lci_test::post_retry([&] {
    return lci::post_put_x(0, buf.data(), buf.size(), cq, 0, lci::get_rmr(mr))
        .remote_comp(rc)();
  });
  ASSERT_FALSE(s.is_retry());
  EXPECT_THAT(
      lci_test::progress_until_fatal(),
      AllOf(HasSubstr("not registered"), HasSubstr(std::to_string(rc))));
  // the put's ack says so: the put fails (not left in flight)
  EXPECT_THAT(lci_test::progress_until_fatal(),
              AllOf(HasSubstr("the put of 64 bytes"), HasSubstr("refused")));
  // above every route's eager limit (a native shm route sends more than a
  // packet eagerly): a rendezvous, whose refusal reaches the sender
  std::vector<char> big(
      std::max(lci::get_max_bcopy_size() + 1, size_t(64) << 10), 'a');
  s = lci_test::post_retry(
      [&] { return lci::post_am(0, big.data(), big.size(), cq, rc); });
  ASSERT_FALSE(s.is_retry());
  EXPECT_THAT(lci_test::progress_until_fatal(), HasSubstr("not registered"));
  // the sender is told: it gives the message up (and says so)
  EXPECT_THAT(lci_test::progress_until_fatal(),
              AllOf(HasSubstr("post_am"), HasSubstr("refused")));
  lci::deregister_memory(&mr);
  lci::free_comp(&cq);
  expect_sendrecv_works();
  expect_rma_works();
}

}  // namespace
