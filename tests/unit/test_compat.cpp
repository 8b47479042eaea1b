// Compatibility with upstream LCI 2's interface (github.com/uiuc-hpc/lci):
// behaviours and names its client programs rely on.
#include "lci_test_common.hpp"

namespace
{

using lci_test::fatal_message;
using lci_test::LciTest;
using ::testing::HasSubstr;

// A registration of 0 bytes is valid (upstream's tests register buffers of
// every size from 0): a live handle whose rmr is not empty, puts and gets of
// 0 bytes with it (with and without signal), and its deregistration. On
// every backend a runtime may use.
void check_zero_size_registration(lci::runtime_t rt, void* address)
{
  SCOPED_TRACE(address ? "a buffer" : "a null address");
  lci::mr_t mr = lci::register_memory_x(address, 0).runtime(rt)();
  ASSERT_FALSE(mr.is_empty());
  lci::rmr_t rmr = lci::get_rmr(mr);
  EXPECT_FALSE(rmr.is_empty());
  EXPECT_EQ(rmr.size, 0u);
  EXPECT_EQ(rmr.rank, 0);
  char local = 'x';
  lci::comp_t sync = lci::alloc_sync_x().runtime(rt)();
  lci::rcomp_t rcomp = lci::register_rcomp_x(sync).runtime(rt)();
  for (bool put : {true, false}) {
    for (bool signal : {false, true}) {
      SCOPED_TRACE(std::string(put ? "put" : "get") +
                   (signal ? " with signal" : ""));
      lci::status_t st =
          lci::post_comm_x(put ? lci::direction_t::OUT : lci::direction_t::IN,
                           0, &local, 0, lci::COMP_NULL)
              .runtime(rt)
              .rmr(rmr)
              .tag(7)
              .remote_comp(signal ? rcomp : lci::RCOMP_NULL)();
      EXPECT_TRUE(st.is_done()) << st.error.get_str();
      EXPECT_EQ(st.size, 0u);
      EXPECT_EQ(local, 'x');
      if (!signal) continue;
      lci::status_t got;
      auto deadline = std::chrono::steady_clock::now() + lci_test::kWaitLimit;
      while (!lci::sync_test(sync, &got) &&
             std::chrono::steady_clock::now() < deadline)
        lci::progress_x().runtime(rt)();
      EXPECT_TRUE(got.is_done()) << got.error.get_str();
      EXPECT_EQ(got.size, 0u);
      EXPECT_EQ(got.rank, 0);
      EXPECT_EQ(got.tag, 7u);
    }
  }
  // an access beyond its 0 bytes is refused, naming the region's size
  std::string msg = fatal_message([&] {
    lci::post_put_x(0, &local, 1, lci::COMP_NULL, 0, rmr).runtime(rt)();
  });
  EXPECT_THAT(msg, HasSubstr("0-byte remote region"));
  lci::deregister_memory_x(&mr).runtime(rt)();
  EXPECT_TRUE(mr.is_empty());
  lci::deregister_rcomp_x(rcomp).runtime(rt)();
  lci::free_comp(&sync);
}

TEST(Compat, RegisterZeroBytes)
{
  struct backend_t {
    const char* backend;
    const char* provider;
  };
  for (backend_t b : {backend_t{"ofi", "shm"}, backend_t{"ofi", "tcp"},
                      backend_t{"shm", "shm"}}) {
    SCOPED_TRACE(std::string(b.backend) + "/" + b.provider);
    lci::runtime_t rt =
        lci::alloc_runtime_x().backend(b.backend).ofi_provider_name(
            b.provider)();
    char buf[16];
    check_zero_size_registration(rt, buf);
    check_zero_size_registration(rt, nullptr);
    // a null address with bytes to register is still an error
    std::string msg = fatal_message(
        [&] { lci::register_memory_x(nullptr, 8).runtime(rt)(); });
    EXPECT_THAT(msg, HasSubstr("null address"));
    lci::free_runtime(&rt);
  }
}

// A second g_runtime_init keeps the runtime (upstream warns and returns
// it); each init needs its fina, the last one frees it.
TEST(Compat, GlobalRuntimeInitTwice)
{
  lci::runtime_t first = lci::g_runtime_init_x().packet_size(4096)();
  ASSERT_FALSE(first.is_empty());
  EXPECT_EQ(lci::get_g_runtime(), first);
  ::testing::internal::CaptureStderr();
  lci::runtime_t second = lci::g_runtime_init_x().packet_size(16384)();
  std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(second, first);
  EXPECT_THAT(warning, HasSubstr("already initialized"));
  // the first call's attributes stay
  EXPECT_EQ(first.get_attr_packet_size(), 4096u);
  lci::g_runtime_fina();
  // one init is still unmatched: the runtime lives on and works
  ASSERT_EQ(lci::get_g_runtime(), first);
  lci_test::expect_sendrecv_works();
  lci::g_runtime_fina();
  EXPECT_TRUE(lci::get_g_runtime().is_empty());
  std::string msg = fatal_message([] { lci::g_runtime_fina(); });
  EXPECT_THAT(msg, HasSubstr("not initialized"));
  // and it can come back
  lci::g_runtime_init();
  lci_test::expect_sendrecv_works();
  lci::g_runtime_fina();
}

}  // namespace
