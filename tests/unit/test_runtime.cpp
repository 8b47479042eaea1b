// Runtime lifecycle, ranks, several runtimes at once, and attributes
// (defaults, setters, LCI_ATTR_* environment overrides, precedence).
#include "lci_test_common.hpp"

namespace
{

using lci_test::env_guard_t;
using lci_test::LciTest;
using ::testing::HasSubstr;

constexpr size_t kHeader = 16;  // the wire header in front of every payload

TEST_F(LciTest, RankMeAndRankN)
{
  EXPECT_EQ(lci::get_rank_me(), 0);
  EXPECT_EQ(lci::get_rank_n(), 1);
  lci::runtime_t g = lci::get_g_runtime();
  EXPECT_EQ(lci::get_rank_me_x().runtime(g)(), 0);
  EXPECT_EQ(lci::get_rank_n_x().runtime(g)(), 1);
  EXPECT_FALSE(lci::get_default_device().is_empty());
  EXPECT_FALSE(lci::get_default_packet_pool().is_empty());
  EXPECT_FALSE(lci::get_default_matching_engine().is_empty());
}

// Without the fixture: the global runtime comes and goes, and can come back.
TEST(GlobalRuntime, InitFinaCycle)
{
  EXPECT_TRUE(lci::get_g_runtime().is_empty());
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    lci::g_runtime_init();
    lci::runtime_t g = lci::get_g_runtime();
    ASSERT_FALSE(g.is_empty());
    EXPECT_EQ(lci::get_rank_me(), 0);
    EXPECT_EQ(lci::get_rank_n(), 1);
    lci_test::expect_sendrecv_works(lci::runtime_t(), lci::device_t(),
                                    100 + round);
    lci::g_runtime_fina();
    EXPECT_TRUE(lci::get_g_runtime().is_empty());
  }
  // no global runtime: calls that need one say so
  std::string msg = lci_test::fatal_message([] { lci::get_rank_me(); });
  EXPECT_THAT(msg, HasSubstr("get_rank_me"));
  EXPECT_THAT(msg, HasSubstr("no runtime"));
}

TEST(GlobalRuntime, InitWithSetters)
{
  lci::g_runtime_init_x().packet_size(4096).max_tag(5000)();
  lci::runtime_t g = lci::get_g_runtime();
  ASSERT_FALSE(g.is_empty());
  EXPECT_EQ(g.get_attr_packet_size(), 4096u);
  EXPECT_EQ(g.get_attr_max_tag(), 5000u);
  EXPECT_EQ(lci::get_max_bcopy_size(), 4096u - kHeader);
  lci_test::expect_sendrecv_works(lci::runtime_t(), lci::device_t(), 4999,
                                  4096 - kHeader);
  lci::g_runtime_fina();
}

TEST_F(LciTest, DefaultAttributesReadable)
{
  lci::runtime_t g = lci::get_g_runtime();
  EXPECT_EQ(g.get_attr_ofi_provider_name(), "shm");
  EXPECT_EQ(g.get_attr_backend(), "ofi");  // pinned (lci_test_common.hpp)
  // 64 is the default; shm's inject size (4096) does not clamp it
  EXPECT_EQ(g.get_attr_max_inject_size(), 64u);
  EXPECT_EQ(g.get_attr_max_tag(), 0xfffffffffffffffeull);
  EXPECT_TRUE(g.get_attr_alloc_default_device());
  EXPECT_EQ(g.get_attr_packet_size(), 8192u);
  EXPECT_EQ(g.get_attr_npackets(), 4096u);
  lci::runtime_attr_t ra = g.get_attr();
  EXPECT_EQ(ra.packet_size, 8192u);
  EXPECT_EQ(ra.ofi_provider_name, "shm");

  lci::device_t d = lci::get_default_device();
  EXPECT_EQ(d.get_attr_net_max_sends(), 1024u);
  EXPECT_EQ(d.get_attr_net_max_recvs(), 256u);
  EXPECT_EQ(d.get_attr_net_max_cqes(), 8192u);
  EXPECT_EQ(d.get_attr().net_max_recvs, 256u);

  lci::packet_pool_t p = lci::get_default_packet_pool();
  EXPECT_EQ(p.get_attr_packet_size(), 8192u);
  EXPECT_EQ(p.get_attr_npackets(), 4096u);
  EXPECT_EQ(lci::get_max_bcopy_size(), 8192u - kHeader);

  lci::matching_engine_t me = lci::get_default_matching_engine();
  EXPECT_EQ(me.get_attr_num_buckets(), 65536u);

  // a freshly allocated runtime and device have the same defaults
  lci::runtime_t rt = lci::alloc_runtime();
  EXPECT_EQ(rt.get_attr_packet_size(), 8192u);
  EXPECT_EQ(rt.get_attr_max_inject_size(), 64u);
  lci::device_t d2 = lci::alloc_device_x().runtime(rt)();
  EXPECT_EQ(d2.get_attr_net_max_recvs(), 256u);
  EXPECT_EQ(d2.get_attr_net_max_sends(), 1024u);
  lci::free_device_x(&d2).runtime(rt)();
  EXPECT_TRUE(d2.is_empty());
  lci::free_runtime(&rt);
  EXPECT_TRUE(rt.is_empty());
}

TEST_F(LciTest, SetterOverrides)
{
  lci::runtime_t rt = lci::alloc_runtime_x()
                          .packet_size(4096)
                          .npackets(512)
                          .max_tag(1000)
                          .max_inject_size(32)();
  ASSERT_FALSE(rt.is_empty());
  EXPECT_EQ(rt.get_attr_packet_size(), 4096u);
  EXPECT_EQ(rt.get_attr_npackets(), 512u);
  EXPECT_EQ(rt.get_attr_max_tag(), 1000u);
  EXPECT_EQ(rt.get_attr_max_inject_size(), 32u);
  // the default packet pool follows the runtime's packet attributes
  lci::packet_pool_t pool = lci::get_default_packet_pool_x().runtime(rt)();
  EXPECT_EQ(pool.get_attr_packet_size(), 4096u);
  EXPECT_EQ(pool.get_attr_npackets(), 512u);
  EXPECT_EQ(lci::get_max_bcopy_size_x().runtime(rt)(), 4096u - kHeader);
  // the global runtime is unaffected
  EXPECT_EQ(lci::get_g_runtime().get_attr_packet_size(), 8192u);

  lci::device_t dev =
      lci::alloc_device_x().runtime(rt).net_max_recvs(16).net_max_sends(64)();
  EXPECT_EQ(dev.get_attr_net_max_recvs(), 16u);
  EXPECT_EQ(dev.get_attr_net_max_sends(), 64u);
  EXPECT_EQ(dev.get_attr_net_max_cqes(), 8192u);  // not set: default

  // the device with only 16 pre-posted receives carries more messages than
  // that, up to the runtime's new eager limit
  for (int i = 0; i < 40; ++i)
    lci_test::expect_sendrecv_works(rt, dev, 900 + i,
                                    i % 2 ? 4096 - kHeader : 33);

  lci::free_device_x(&dev).runtime(rt)();
  lci::free_runtime(&rt);

  lci::packet_pool_t small =
      lci::alloc_packet_pool_x().packet_size(1024).npackets(8)();
  EXPECT_EQ(small.get_attr_packet_size(), 1024u);
  EXPECT_EQ(small.get_attr_npackets(), 8u);
  EXPECT_EQ(lci::get_max_bcopy_size_x().packet_pool(small)(), 1024u - kHeader);
  lci::free_packet_pool(&small);
  EXPECT_TRUE(small.is_empty());

  lci::matching_engine_t me = lci::alloc_matching_engine_x().num_buckets(16)();
  EXPECT_EQ(me.get_attr_num_buckets(), 16u);
  lci::free_matching_engine(&me);
  EXPECT_TRUE(me.is_empty());
}

TEST_F(LciTest, EnvironmentOverrides)
{
  lci::runtime_t rt;
  lci::device_t dev;
  {
    env_guard_t e1("LCI_ATTR_PACKET_SIZE", "4096");
    env_guard_t e2("LCI_ATTR_NET_MAX_RECVS", "32");
    env_guard_t e3("LCI_ATTR_MAX_TAG", "77");
    env_guard_t e4("LCI_ATTR_NUM_BUCKETS", "64");
    rt = lci::alloc_runtime();
    dev = lci::alloc_device_x().runtime(rt)();
  }
  EXPECT_EQ(rt.get_attr_packet_size(), 4096u);
  EXPECT_EQ(rt.get_attr_max_tag(), 77u);
  EXPECT_EQ(lci::get_max_bcopy_size_x().runtime(rt)(), 4096u - kHeader);
  // the runtime's default device read the environment as well
  EXPECT_EQ(lci::get_default_device_x().runtime(rt)().get_attr_net_max_recvs(),
            32u);
  EXPECT_EQ(dev.get_attr_net_max_recvs(), 32u);
  EXPECT_EQ(
      lci::get_default_matching_engine_x().runtime(rt)().get_attr_num_buckets(),
      64u);
  lci_test::expect_sendrecv_works(rt, dev, 77);
  lci_test::expect_sendrecv_works(rt, lci::device_t(), 76);

  // the variables are gone: new resources have the defaults again
  lci::runtime_t rt2 = lci::alloc_runtime();
  EXPECT_EQ(rt2.get_attr_packet_size(), 8192u);
  EXPECT_EQ(rt2.get_attr_max_tag(), 0xfffffffffffffffeull);
  lci::device_t dev2 = lci::alloc_device_x().runtime(rt2)();
  EXPECT_EQ(dev2.get_attr_net_max_recvs(), 256u);

  lci::free_device_x(&dev2).runtime(rt2)();
  lci::free_runtime(&rt2);
  lci::free_device_x(&dev).runtime(rt)();
  lci::free_runtime(&rt);
}

TEST_F(LciTest, EnvironmentBooleanAndStringAttributes)
{
  lci::runtime_t rt;
  {
    env_guard_t e1("LCI_ATTR_ALLOC_DEFAULT_DEVICE", "0");
    env_guard_t e2("LCI_ATTR_OFI_PROVIDER_NAME", "shm");
    rt = lci::alloc_runtime();
  }
  EXPECT_FALSE(rt.get_attr_alloc_default_device());
  EXPECT_EQ(rt.get_attr_ofi_provider_name(), "shm");
  EXPECT_TRUE(lci::get_default_device_x().runtime(rt)().is_empty());
  // no default device: posting without one is an error naming the call
  char c = 'x';
  std::string msg = lci_test::fatal_message(
      [&] { lci::post_send_x(0, &c, 1, 1, lci::COMP_NULL).runtime(rt)(); });
  EXPECT_THAT(msg, HasSubstr("post_comm"));
  EXPECT_THAT(msg, HasSubstr("no device"));
  // an explicit device works
  lci::device_t dev = lci::alloc_device_x().runtime(rt)();
  lci_test::expect_sendrecv_works(rt, dev, 5);
  lci::free_device_x(&dev).runtime(rt)();
  lci::free_runtime(&rt);
}

TEST_F(LciTest, SetterBeatsEnvironment)
{
  env_guard_t e1("LCI_ATTR_PACKET_SIZE", "4096");
  env_guard_t e2("LCI_ATTR_NET_MAX_RECVS", "32");
  env_guard_t e3("LCI_ATTR_MAX_INJECT_SIZE", "8");

  lci::runtime_t rt =
      lci::alloc_runtime_x().packet_size(16384).max_inject_size(48)();
  EXPECT_EQ(rt.get_attr_packet_size(), 16384u);
  EXPECT_EQ(rt.get_attr_max_inject_size(), 48u);
  EXPECT_EQ(lci::get_max_bcopy_size_x().runtime(rt)(), 16384u - kHeader);
  // the environment still applies where no setter was given
  EXPECT_EQ(lci::get_default_device_x().runtime(rt)().get_attr_net_max_recvs(),
            32u);

  lci::device_t dev = lci::alloc_device_x().runtime(rt).net_max_recvs(16)();
  EXPECT_EQ(dev.get_attr_net_max_recvs(), 16u);
  lci::device_t dev_env = lci::alloc_device_x().runtime(rt)();
  EXPECT_EQ(dev_env.get_attr_net_max_recvs(), 32u);

  lci_test::expect_sendrecv_works(rt, dev, 1, 16384 - kHeader);
  lci_test::expect_sendrecv_works(rt, dev_env, 2, 48);

  lci::free_device_x(&dev_env).runtime(rt)();
  lci::free_device_x(&dev).runtime(rt)();
  lci::free_runtime(&rt);
}

// Two runtimes (besides the global one) live side by side: separate
// networks and matching engines, so the same tag never crosses over.
TEST_F(LciTest, TwoRuntimesCommunicateIndependently)
{
  lci::runtime_t rt1 = lci::alloc_runtime();
  lci::runtime_t rt2 = lci::alloc_runtime_x().packet_size(4096)();
  ASSERT_FALSE(rt1.is_empty());
  ASSERT_FALSE(rt2.is_empty());
  EXPECT_NE(rt1, rt2);
  EXPECT_NE(rt1, lci::get_g_runtime());
  EXPECT_EQ(lci::get_rank_me_x().runtime(rt1)(), 0);
  EXPECT_EQ(lci::get_rank_n_x().runtime(rt2)(), 1);
  EXPECT_NE(lci::get_default_device_x().runtime(rt1)(),
            lci::get_default_device_x().runtime(rt2)());
  EXPECT_EQ(rt1.get_attr_packet_size(), 8192u);
  EXPECT_EQ(rt2.get_attr_packet_size(), 4096u);

  const lci::tag_t tag = 9;
  const size_t n = 200;
  std::vector<unsigned char> out1(n), out2(n), in1(n, 0), in2(n, 0);
  lci_test::fill_pattern(out1.data(), n, 1);
  lci_test::fill_pattern(out2.data(), n, 2);
  lci::comp_t cq1 = lci::alloc_cq_x().runtime(rt1)();
  lci::comp_t cq2 = lci::alloc_cq_x().runtime(rt2)();

  // a receive on rt2 is not satisfied by a send with the same tag on rt1
  lci::status_t r2 =
      lci::post_recv_x(0, in2.data(), n, tag, cq2).runtime(rt2)();
  ASSERT_TRUE(r2.is_posted());
  lci::status_t s1 =
      lci::post_send_x(0, out1.data(), n, tag, lci::COMP_NULL).runtime(rt1)();
  ASSERT_TRUE(s1.is_done());
  lci_test::progress_for(std::chrono::milliseconds(200), lci::device_t(), rt1);
  lci_test::progress_for(std::chrono::milliseconds(200), lci::device_t(), rt2);
  EXPECT_TRUE(lci::cq_pop(cq2).is_retry()) << "rt1's message reached rt2";

  // rt1's message waits in rt1 (unexpected) and completes a receive there
  lci::status_t r1 =
      lci::post_recv_x(0, in1.data(), n, tag, cq1).runtime(rt1)();
  if (r1.is_posted()) r1 = lci_test::pop_wait(cq1, lci::device_t(), rt1);
  ASSERT_TRUE(r1.is_done());
  EXPECT_EQ(r1.buffer, in1.data());
  EXPECT_EQ(lci_test::first_pattern_mismatch(in1.data(), n, 1), -1);

  // now rt2's own message completes rt2's receive
  lci::status_t s2 =
      lci::post_send_x(0, out2.data(), n, tag, lci::COMP_NULL).runtime(rt2)();
  ASSERT_TRUE(s2.is_done());
  r2 = lci_test::pop_wait(cq2, lci::device_t(), rt2);
  ASSERT_TRUE(r2.is_done());
  EXPECT_EQ(r2.buffer, in2.data());
  EXPECT_EQ(r2.size, n);
  EXPECT_EQ(lci_test::first_pattern_mismatch(in2.data(), n, 2), -1);

  lci::free_comp(&cq1);
  lci::free_comp(&cq2);

  // freeing one runtime leaves the others working
  lci::free_runtime(&rt1);
  EXPECT_TRUE(rt1.is_empty());
  lci_test::expect_sendrecv_works(rt2, lci::device_t(), 11);
  lci_test::expect_sendrecv_works();
  lci::free_runtime(&rt2);
  lci_test::expect_sendrecv_works();
}

// A runtime handle copied around refers to the same runtime.
TEST_F(LciTest, RuntimeHandleCopies)
{
  lci::runtime_t rt = lci::alloc_runtime_x().max_tag(12345)();
  lci::runtime_t copy = rt;
  EXPECT_EQ(copy, rt);
  EXPECT_EQ(copy.get_impl(), rt.get_impl());
  EXPECT_EQ(copy.get_attr_max_tag(), 12345u);
  lci_test::expect_sendrecv_works(copy, lci::device_t(), 12345);
  lci::free_runtime(&rt);
  EXPECT_TRUE(rt.is_empty());
  EXPECT_FALSE(copy.is_empty());  // a copy does not know; freeing it fails
}

}  // namespace

// The default backend, auto, is the native shm backend alone for a
// singleton (every rank on this node): no libfabric provider is opened, so
// even one that does not exist here is never asked for. The unit tests pin
// ofi (lci_test_common.hpp); this one lifts the pin.
TEST(Backend, AutoIsNativeShmOnOneNode)
{
  env_guard_t provider("LCI_ATTR_OFI_PROVIDER_NAME", "verbs");
  for (const char* backend : {"auto", ""}) {
    env_guard_t pin("LCI_ATTR_BACKEND", backend);
    if (!*backend) ::unsetenv("LCI_ATTR_BACKEND");  // the default
    lci::runtime_t rt = lci::alloc_runtime();
    EXPECT_EQ(rt.get_attr_backend(), "shm") << "backend '" << backend << "'";
    lci_test::expect_sendrecv_works(rt, lci::device_t(), 4242, 1000);
    lci::free_runtime(&rt);
  }
  // explicitly ofi: the provider is needed, and it is not there
  env_guard_t pin("LCI_ATTR_BACKEND", "ofi");
  EXPECT_THROW(lci::alloc_runtime(), lci::fatal_error);
}
