// Compatibility with upstream LCI 2's interface (github.com/uiuc-hpc/lci):
// behaviours and names its client programs rely on.
#include <atomic>
#include <cstring>
#include <thread>

#include "lci_test_common.hpp"

namespace
{

using lci_test::fatal_message;
using lci_test::LciTest;
using ::testing::HasSubstr;

// A send to self and its receive, both posted to `cq`: the send's status
// `st` (done, or its completion comes through `cq`) and the receive's
// completion.
void expect_both_done(lci::status_t st, lci::comp_t cq, lci::device_t dev)
{
  int done = st.is_done() ? 1 : 0;
  while (done < 2) {
    lci::status_t s = lci_test::pop_wait(cq, dev);
    ASSERT_TRUE(s.is_done()) << s.error.get_str();
    ++done;
  }
}

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

namespace lci_compat
{
size_t use_header_only_names();  // compat_header_only.cpp
}

namespace
{

TEST(Compat, HeaderIncludesWhatUpstreamsDoes)
{
  // 7 + 7 + 5 + 6 + 2 + 3
  EXPECT_EQ(lci_compat::use_header_only_names(), 30u);
}

TEST(Compat, StatusConstructorsAndSetters)
{
  int x = 0;
  lci::status_t s(static_cast<void*>(&x));
  EXPECT_TRUE(s.is_done());
  EXPECT_EQ(s.user_context, &x);
  EXPECT_EQ(s.rank, -1);
  EXPECT_EQ(s.buffer, nullptr);
  EXPECT_EQ(s.size, 0u);
  s.set_posted();
  EXPECT_TRUE(s.is_posted());
  s.set_retry();
  EXPECT_TRUE(s.is_retry());
  s.set_done();
  EXPECT_TRUE(s.is_done());
  EXPECT_EQ(s.error, lci::errorcode_t::done);
  // an errorcode still converts implicitly (status_t s = errorcode_t::...)
  lci::status_t r = lci::errorcode_t::posted;
  EXPECT_TRUE(r.is_posted());
  EXPECT_EQ(r.user_context, nullptr);
  r.error.reset_retry();
  EXPECT_EQ(r.error, lci::errorcode_t::retry);
}

// upstream's names of the two null completions
TEST_F(LciTest, NullCompletionNames)
{
  EXPECT_EQ(lci::COMP_NULL_EXPECT_DONE, lci::COMP_NULL);
  EXPECT_EQ(lci::COMP_NULL_EXPECT_DONE_OR_RETRY, lci::COMP_NULL_RETRY);
  uint64_t in = 0, out = 42;
  lci::comp_t cq = lci::alloc_cq();
  ASSERT_TRUE(lci::post_recv(0, &in, 8, 9, cq).is_posted());
  lci::status_t st = lci::post_send(0, &out, 8, 9, lci::COMP_NULL_EXPECT_DONE);
  EXPECT_TRUE(st.is_done()) << st.error.get_str();
  lci::status_t got = lci_test::pop_wait(cq, lci::get_default_device());
  EXPECT_TRUE(got.is_done());
  EXPECT_EQ(in, 42u);
  lci::free_comp(&cq);
}

// comp_signal with status_t(user_context), as upstream's custom operations
// complete a posted graph node
TEST_F(LciTest, SignalAUserContext)
{
  lci::comp_t sync = lci::alloc_sync();
  int x = 0;
  lci::comp_signal(sync, lci::status_t(static_cast<void*>(&x)));
  lci::status_t got;
  ASSERT_TRUE(lci::sync_test(sync, &got));
  EXPECT_TRUE(got.is_done());
  EXPECT_EQ(got.user_context, &x);
  lci::free_comp(&sync);
}

// A failed operation reaches a completion queue as failed (the peer-failure
// path of mp_peer_failure, in one process): cq_pop keeps a fatal error and
// reports every other status as done; through the array queue's overflow
// too.
TEST_F(LciTest, CqPopKeepsAFailure)
{
  for (const char* type : {"lcrq", "array"}) {
    SCOPED_TRACE(type);
    lci::comp_t cq = lci::alloc_cq_x().cq_type(type).default_length(4)();
    for (int i = 0; i < 12; ++i) {
      lci::status_t s(i % 2 ? lci::errorcode_t::fatal_peer_failure
                            : lci::errorcode_t::posted);
      s.rank = i;
      lci::comp_signal(cq, s);
    }
    for (int i = 0; i < 12; ++i) {
      lci::status_t got = lci::cq_pop(cq);
      EXPECT_EQ(got.rank, i);
      EXPECT_EQ(got.error, i % 2 ? lci::errorcode_t::fatal_peer_failure
                                 : lci::errorcode_t::done);
    }
    EXPECT_TRUE(lci::cq_pop(cq).is_retry());
    lci::free_comp(&cq);
  }
}

TEST_F(LciTest, MemoryKinds)
{
  EXPECT_EQ(lci::MR_HOST, lci::mr_t());
  EXPECT_TRUE(lci::MR_HOST.is_empty());
  EXPECT_TRUE(lci::MR_DEVICE.is_empty());
  EXPECT_TRUE(lci::MR_UNKNOWN.is_empty());
  EXPECT_NE(lci::MR_DEVICE, lci::MR_UNKNOWN);
  // host memory, named either way: eager and rendezvous sizes, and a put
  const size_t big = lci::get_max_bcopy_size() * 4;
  for (lci::mr_t kind : {lci::MR_HOST, lci::MR_UNKNOWN}) {
    for (size_t size : {size_t(8), big}) {
      SCOPED_TRACE(size);
      std::vector<char> out(size), in(size, 0);
      lci_test::fill_pattern(out.data(), size, 3);
      // allow_done(false): both always signal the synchronizer
      lci::comp_t sync = lci::alloc_sync_x().threshold(2)();
      lci::status_t r = lci::post_recv_x(0, in.data(), size, 21, sync)
                            .mr(kind)
                            .allow_done(false)();
      lci::status_t s = lci::post_send_x(0, out.data(), size, 21, sync)
                            .mr(kind)
                            .allow_done(false)
                            .allow_retry(false)();
      EXPECT_TRUE(r.is_posted()) << r.error.get_str();
      EXPECT_TRUE(s.is_posted()) << s.error.get_str();
      lci::sync_wait(sync, nullptr);
      EXPECT_EQ(in, out);
      lci::free_comp(&sync);
    }
    std::vector<char> region(64, 0), data(64, 'm');
    lci::mr_t mr = lci::register_memory(region.data(), region.size());
    lci::status_t st = lci::post_put_x(0, data.data(), data.size(),
                                       lci::COMP_NULL, 0, lci::get_rmr(mr))
                           .mr(kind)();
    EXPECT_TRUE(st.is_done()) << st.error.get_str();
    EXPECT_EQ(region, data);
    lci::deregister_memory(&mr);
  }
  // accelerator memory: this build cannot reach it, and says so
  char buf[8] = {};
  std::string msg = fatal_message([&] {
    lci::post_send_x(0, buf, sizeof(buf), 22, lci::COMP_NULL_RETRY)
        .mr(lci::MR_DEVICE)();
  });
  EXPECT_THAT(msg, HasSubstr("MR_DEVICE"));
  // the memory kinds are not registrations
  msg = fatal_message([] {
    lci::mr_t m = lci::MR_UNKNOWN;
    lci::deregister_memory(&m);
  });
  EXPECT_THAT(msg, HasSubstr("deregister_memory"));
  lci_test::expect_sendrecv_works();
}

TEST(Compat, AlgorithmNames)
{
  using lci::allgather_algorithm_t;
  using lci::allreduce_algorithm_t;
  using lci::broadcast_algorithm_t;
  using lci::reduce_scatter_algorithm_t;
  EXPECT_STREQ(lci::get_broadcast_algorithm_str(broadcast_algorithm_t::none),
               "none");
  EXPECT_STREQ(lci::get_broadcast_algorithm_str(broadcast_algorithm_t::direct),
               "direct");
  EXPECT_STREQ(lci::get_broadcast_algorithm_str(broadcast_algorithm_t::tree),
               "tree");
  EXPECT_STREQ(lci::get_broadcast_algorithm_str(broadcast_algorithm_t::ring),
               "ring");
  EXPECT_STREQ(lci::get_allreduce_algorithm_str(
                   allreduce_algorithm_t::recursive_doubling),
               "tree");
  EXPECT_STREQ(lci::get_allreduce_algorithm_str(allreduce_algorithm_t::ring),
               "ring");
  EXPECT_STREQ(
      lci::get_reduce_scatter_algorithm_str(reduce_scatter_algorithm_t::direct),
      "direct");
  EXPECT_STREQ(
      lci::get_reduce_scatter_algorithm_str(reduce_scatter_algorithm_t::tree),
      "tree");
  EXPECT_STREQ(lci::get_allgather_algorithm_str(allgather_algorithm_t::ring),
               "ring");
  EXPECT_STREQ(
      lci::get_allgather_algorithm_str(static_cast<allgather_algorithm_t>(9)),
      "unknown");
  EXPECT_STREQ(
      lci::get_broadcast_algorithm_str(static_cast<broadcast_algorithm_t>(-1)),
      "unknown");
}

TEST_F(LciTest, RegisterMemoryOnADevice)
{
  lci::device_t dev = lci::alloc_device();
  std::vector<char> region(256, 0), data(256, 'd');
  lci::mr_t mr =
      lci::register_memory_x(region.data(), region.size()).device(dev)();
  ASSERT_FALSE(mr.is_empty());
  // valid on every device of the runtime: a put through the other device
  for (lci::device_t d : {dev, lci::get_default_device()}) {
    std::fill(region.begin(), region.end(), 0);
    lci::status_t st = lci::post_put_x(0, data.data(), data.size(),
                                       lci::COMP_NULL, 0, lci::get_rmr(mr))
                           .device(d)();
    EXPECT_TRUE(st.is_done()) << st.error.get_str();
    EXPECT_EQ(region, data);
  }
  lci::deregister_memory(&mr);
  // a device of another runtime than the one given is refused
  lci::runtime_t rt2 = lci::alloc_runtime();
  std::string msg = fatal_message([&] {
    lci::register_memory_x(region.data(), region.size())
        .runtime(rt2)
        .device(dev)();
  });
  EXPECT_THAT(msg, HasSubstr("register_memory"));
  lci::free_runtime(&rt2);
  // and a freed device
  lci::device_t gone = dev;
  lci::free_device(&dev);
  msg = fatal_message([&] {
    lci::register_memory_x(region.data(), region.size()).device(gone)();
  });
  EXPECT_THAT(msg, HasSubstr("register_memory"));
}

void count_am(lci::status_t status) { std::free(status.buffer); }

TEST_F(LciTest, ZeroCopyAmOption)
{
  // false: what every completion object does
  lci::comp_t h = lci::alloc_handler_x(&count_am).zero_copy_am(false)();
  lci::comp_t s = lci::alloc_sync_x().zero_copy_am(false)();
  lci::comp_t q = lci::alloc_cq_x().zero_copy_am(false)();
  lci::free_comp(&h);
  lci::free_comp(&s);
  lci::free_comp(&q);
}

// zero_copy_am(true) (paper 3.3.1): an eager active message arrives in a
// packet, a user packet the receiver gives back with put_upacket; on the
// ofi backend (the message lands in a receive packet, kept) and on native
// shm (it comes in place and is copied into a packet).
TEST_F(LciTest, ZeroCopyAmDeliversPackets)
{
  lci::runtime_t shm = lci::alloc_runtime_x().backend("shm")();
  for (lci::runtime_t rt : {lci::get_g_runtime(), shm}) {
    SCOPED_TRACE(rt.get_attr_backend());
    lci::comp_t zq = lci::alloc_cq_x().zero_copy_am(true)();
    lci::comp_t plain = lci::alloc_cq();
    lci::rcomp_t zr = lci::register_rcomp_x(zq).runtime(rt)();
    lci::rcomp_t pr = lci::register_rcomp_x(plain).runtime(rt)();
    const size_t max = lci::get_max_bcopy_size_x().runtime(rt)();
    std::vector<char> msg(max);
    for (size_t i = 0; i < max; ++i) msg[i] = static_cast<char>(i * 13 + 1);
    for (size_t size : {size_t(0), size_t(8), size_t(100), max}) {
      SCOPED_TRACE(size);
      for (lci::rcomp_t r : {zr, pr}) {
        lci::status_t st;
        do {
          st = lci::post_am_x(0, msg.data(), size, lci::COMP_NULL_RETRY, r)
                   .runtime(rt)();
          if (st.is_retry()) lci::progress_x().runtime(rt)();
        } while (st.is_retry());
        ASSERT_TRUE(st.is_done()) << st.error.get_str();
        lci::comp_t cq = r == zr ? zq : plain;
        lci::status_t got;
        do {
          lci::progress_x().runtime(rt)();
          got = lci::cq_pop(cq);
        } while (got.is_retry());
        ASSERT_EQ(got.size, size);
        if (size) {
          EXPECT_EQ(std::memcmp(got.buffer, msg.data(), size), 0);
        }
        if (r == zr) {
          // a user packet: put_upacket takes it, once
          ASSERT_NE(got.buffer, nullptr);
          lci::put_upacket_x(got.buffer).runtime(rt)();
          std::string m = fatal_message([&] { lci::put_upacket(got.buffer); });
          EXPECT_THAT(m, HasSubstr("put_upacket"));
        } else {
          // the allocator's: not a packet
          if (size) {
            std::string m =
                fatal_message([&] { lci::put_upacket(got.buffer); });
            EXPECT_THAT(m, HasSubstr("not a packet"));
          }
          std::free(got.buffer);
        }
      }
    }
    lci::deregister_rcomp_x(zr).runtime(rt)();
    lci::deregister_rcomp_x(pr).runtime(rt)();
    lci::free_comp(&zq);
    lci::free_comp(&plain);
  }
  lci::free_runtime(&shm);
}

// Upstream's custom graph operation: a functor with operator()() and
// user_context(void*) that starts work elsewhere and returns posted; the
// work signals the graph with status_t(user_context).
struct threaded_op_x {
  std::thread* thread;
  lci::comp_t graph;
  std::atomic<int>* order;
  int* my_turn;
  void* ctx = nullptr;
  void user_context(void* c) { ctx = c; }
  lci::status_t operator()()
  {
    lci::comp_t g = graph;
    void* c = ctx;
    std::atomic<int>* o = order;
    int* turn = my_turn;
    *thread = std::thread([g, c, o, turn] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      *turn = o->fetch_add(1);
      lci::comp_signal(g, lci::status_t(c));
    });
    return lci::errorcode_t::posted;
  }
};
// results that are no status: an error code, and nothing
struct code_op_x {
  std::atomic<int>* order;
  int* my_turn;
  void user_context(void*) {}
  lci::errorcode_t operator()()
  {
    *my_turn = order->fetch_add(1);
    return lci::errorcode_t::done;
  }
};
struct void_op_x {
  std::atomic<int>* order;
  int* my_turn;
  void user_context(void*) {}
  void operator()() { *my_turn = order->fetch_add(1); }
};

TEST_F(LciTest, GraphNodeOfAnyFunctor)
{
  lci::comp_t graph = lci::alloc_graph();
  std::atomic<int> order{0};
  int t_code = -1, t_thread = -1, t_void = -1;
  std::thread worker;
  lci::graph_node_t a =
      lci::graph_add_node_op(graph, code_op_x{&order, &t_code});
  lci::graph_node_t b = lci::graph_add_node_op(
      graph, threaded_op_x{&worker, graph, &order, &t_thread});
  lci::graph_node_t c =
      lci::graph_add_node_op(graph, void_op_x{&order, &t_void});
  // a posting operation built with another completion object still
  // completes into the graph
  char out = 'g', in = 0;
  lci::graph_node_t send = lci::graph_add_node_op(
      graph, lci::post_send_x(0, &out, 1, 31, lci::COMP_NULL_RETRY)
                 .allow_retry(false));
  lci::graph_node_t recv = lci::graph_add_node_op(
      graph,
      lci::post_recv_x(0, &in, 1, 31, lci::COMP_NULL_RETRY).allow_retry(false));
  lci::graph_add_edge(graph, lci::GRAPH_START, a);
  lci::graph_add_edge(graph, a, b);
  lci::graph_add_edge(graph, b, c);
  lci::graph_add_edge(graph, c, send);
  lci::graph_add_edge(graph, c, recv);
  lci::graph_add_edge(graph, send, lci::GRAPH_END);
  lci::graph_add_edge(graph, recv, lci::GRAPH_END);
  lci::graph_start(graph);
  auto deadline = std::chrono::steady_clock::now() + lci_test::kWaitLimit;
  while (lci::graph_test(graph).is_retry() &&
         std::chrono::steady_clock::now() < deadline)
    lci::progress();
  EXPECT_TRUE(lci::graph_test(graph).is_done());
  worker.join();
  EXPECT_EQ(t_code, 0);
  EXPECT_EQ(t_thread, 1);
  EXPECT_EQ(t_void, 2);
  EXPECT_EQ(in, 'g');
  lci::free_comp(&graph);
}

// rdv_protocol is the enum attr_rdv_protocol_t, as upstream's; the
// environment names a value; after allocation it reports the protocol in
// force (auto_select resolved).
TEST(Compat, RdvProtocolEnum)
{
  lci::runtime_t rt =
      lci::alloc_runtime_x().rdv_protocol(lci::attr_rdv_protocol_t::write)();
  EXPECT_EQ(rt.get_attr_rdv_protocol(), lci::attr_rdv_protocol_t::write);
  lci::free_runtime(&rt);
  rt = lci::alloc_runtime_x()
           .rdv_protocol(lci::attr_rdv_protocol_t::auto_select)
           .backend("shm")();
  // native shm delivers immediate data: auto_select is writeimm
  EXPECT_EQ(rt.get_attr_rdv_protocol(), lci::attr_rdv_protocol_t::writeimm);
  lci::free_runtime(&rt);
  {
    lci_test::env_guard_t env("LCI_ATTR_RDV_PROTOCOL", "get");
    rt = lci::alloc_runtime();
    EXPECT_EQ(rt.get_attr_rdv_protocol(), lci::attr_rdv_protocol_t::get);
    EXPECT_STREQ(lci::get_attr_rdv_protocol_str(rt.get_attr_rdv_protocol()),
                 "get");
    lci::free_runtime(&rt);
  }
  {
    lci_test::env_guard_t env("LCI_ATTR_RDV_PROTOCOL", "auto");
    std::string msg = fatal_message([] { lci::alloc_runtime(); });
    EXPECT_THAT(msg, HasSubstr("LCI_ATTR_RDV_PROTOCOL"));
    EXPECT_THAT(msg, HasSubstr("auto_select, write, writeimm, get"));
  }
  std::string msg = fatal_message([] {
    lci::alloc_runtime_x().rdv_protocol(
        static_cast<lci::attr_rdv_protocol_t>(42))();
  });
  EXPECT_THAT(msg, HasSubstr("not a value of attr_rdv_protocol_t"));
}

// The ibverbs settings and the completion queue's type are upstream's enum
// types (attr_cq_type_t, attr_ibv_odp_strategy_t,
// attr_ibv_prefetch_strategy_t, attr_ibv_td_strategy_t) with its values;
// the environment and a setter's string form name a value (cq_type also by
// this library's short name, array); a value out of range is refused.
TEST(Compat, AttributeEnums)
{
  using lci::attr_cq_type_t;
  using lci::attr_ibv_odp_strategy_t;
  using lci::attr_ibv_prefetch_strategy_t;
  using lci::attr_ibv_td_strategy_t;
  // upstream's order of values
  EXPECT_EQ(static_cast<int>(attr_cq_type_t::array_atomic), 0);
  EXPECT_EQ(static_cast<int>(attr_cq_type_t::lcrq), 1);
  EXPECT_EQ(static_cast<int>(attr_ibv_prefetch_strategy_t::prefetch_no_fault),
            3);
  EXPECT_EQ(static_cast<int>(attr_ibv_td_strategy_t::per_qp), 2);
  EXPECT_STREQ(
      lci::get_attr_ibv_odp_strategy_str(attr_ibv_odp_strategy_t::implicit_odp),
      "implicit_odp");
  lci::global_attr_t g = lci::get_g_default_attr();
  EXPECT_EQ(g.cq_type, attr_cq_type_t::lcrq);
  EXPECT_EQ(g.ibv_odp_strategy, attr_ibv_odp_strategy_t::none);
  EXPECT_EQ(g.ibv_prefetch_strategy, attr_ibv_prefetch_strategy_t::none);
  EXPECT_EQ(g.ibv_td_strategy, attr_ibv_td_strategy_t::per_qp);
  for (const char* name : {"array", "array_atomic"}) {
    lci_test::env_guard_t env("LCI_ATTR_CQ_TYPE", name);
    EXPECT_EQ(lci::get_g_default_attr().cq_type, attr_cq_type_t::array_atomic)
        << name;
  }
  {
    lci_test::env_guard_t env("LCI_ATTR_IBV_PREFETCH_STRATEGY",
                              "prefetch_write");
    EXPECT_EQ(lci::get_g_default_attr().ibv_prefetch_strategy,
              attr_ibv_prefetch_strategy_t::prefetch_write);
  }
  {
    lci_test::env_guard_t env("LCI_ATTR_IBV_TD_STRATEGY", "per_cq");
    EXPECT_THAT(fatal_message([] { lci::get_g_default_attr(); }),
                HasSubstr("\"per_cq\" is not one of none, all_qp, per_qp"));
  }

  lci::runtime_t rt =
      lci::alloc_runtime_x()
          .ibv_odp_strategy(attr_ibv_odp_strategy_t::explicit_odp)
          .ibv_prefetch_strategy(attr_ibv_prefetch_strategy_t::prefetch)();
  EXPECT_EQ(rt.get_attr_ibv_odp_strategy(),
            attr_ibv_odp_strategy_t::explicit_odp);
  EXPECT_EQ(rt.get_attr_ibv_prefetch_strategy(),
            attr_ibv_prefetch_strategy_t::prefetch);
  lci::device_t dev = lci::alloc_device_x().runtime(rt).ibv_td_strategy(
      attr_ibv_td_strategy_t::all_qp)();
  EXPECT_EQ(dev.get_attr_ibv_td_strategy(), attr_ibv_td_strategy_t::all_qp);
  lci::free_device_x(&dev).runtime(rt)();
  // the string form of a setter
  dev = lci::alloc_device_x().runtime(rt).ibv_td_strategy("none")();
  EXPECT_EQ(dev.get_attr_ibv_td_strategy(), attr_ibv_td_strategy_t::none);
  lci::free_device_x(&dev).runtime(rt)();
  EXPECT_THAT(fatal_message([&] {
                lci::alloc_device_x().runtime(rt).ibv_td_strategy(
                    static_cast<attr_ibv_td_strategy_t>(7))();
              }),
              HasSubstr("ibv_td_strategy 7 is not a value of "
                        "attr_ibv_td_strategy_t"));
  // both queue types, by enum and by name, carry a completion
  for (attr_cq_type_t type :
       {attr_cq_type_t::array_atomic, attr_cq_type_t::lcrq}) {
    lci::comp_t cq = lci::alloc_cq_x().runtime(rt).cq_type(type)();
    lci::comp_signal(cq, lci::status_t(lci::errorcode_t::done));
    EXPECT_TRUE(lci::cq_pop(cq).is_done());
    lci::free_comp(&cq);
  }
  lci::comp_t cq = lci::alloc_cq_x().runtime(rt).cq_type("array")();
  lci::free_comp(&cq);
  EXPECT_THAT(
      fatal_message([&] {
        lci::alloc_cq_x().runtime(rt).cq_type(static_cast<attr_cq_type_t>(5))();
      }),
      HasSubstr("cq_type 5 is not a value of attr_cq_type_t"));
  EXPECT_THAT(fatal_message([&] { lci::alloc_cq_x().cq_type("ring"); }),
              HasSubstr("alloc_cq: cq_type: \"ring\" is not one of "
                        "array_atomic, lcrq"));
  EXPECT_THAT(fatal_message([] {
                lci::alloc_runtime_x().ibv_prefetch_strategy(
                    static_cast<attr_ibv_prefetch_strategy_t>(9))();
              }),
              HasSubstr("is not a value of attr_ibv_prefetch_strategy_t"));
  lci::free_runtime(&rt);
}

// upstream's switches of default resources are accepted and reported (a
// runtime and a device here make theirs either way)
TEST(Compat, DefaultResourceSwitches)
{
  lci::runtime_t rt =
      lci::alloc_runtime_x().alloc_default_matching_engine(false)();
  EXPECT_FALSE(rt.get_attr_alloc_default_matching_engine());
  EXPECT_FALSE(lci::get_default_matching_engine_x().runtime(rt)().is_empty());
  lci::device_t dev = lci::alloc_device_x()
                          .runtime(rt)
                          .alloc_default_endpoint(false)
                          .alloc_progress_endpoint(true)();
  EXPECT_FALSE(dev.get_attr_alloc_default_endpoint());
  EXPECT_TRUE(dev.get_attr_alloc_progress_endpoint());
  EXPECT_FALSE(lci::get_default_endpoint_x().device(dev)().is_empty());
  lci::free_device_x(&dev).runtime(rt)();
  lci::global_attr_t g = lci::get_g_default_attr();
  EXPECT_TRUE(g.alloc_default_matching_engine);
  EXPECT_TRUE(g.alloc_default_endpoint);
  EXPECT_FALSE(g.alloc_progress_endpoint);
  lci::free_runtime(&rt);
}

// upstream's settings of its own implementation: a value that changes
// nothing here is accepted and reported, one upstream refuses is refused
// here too, and the "immediate" limits report what the header carries.
TEST(Compat, UpstreamImplementationSettings)
{
  lci::global_attr_t g = lci::get_g_default_attr();
  EXPECT_EQ(g.packet_return_threshold, 4096u);
  EXPECT_EQ(g.imm_nbits_tag, 16);
  EXPECT_EQ(g.imm_nbits_rcomp, 15);
  EXPECT_EQ(g.net_send_reserved_pct, 0.25);
  EXPECT_TRUE(g.use_reg_cache);
  EXPECT_EQ(g.matching_engine_type, lci::attr_matching_engine_type_t::map);
  EXPECT_EQ(static_cast<int>(lci::attr_matching_engine_type_t::queue), 0);
  EXPECT_EQ(static_cast<int>(lci::attr_matching_engine_type_t::map), 1);
  {
    lci_test::env_guard_t env("LCI_ATTR_NET_SEND_RESERVED_PCT", "0.5");
    EXPECT_EQ(lci::get_g_default_attr().net_send_reserved_pct, 0.5);
  }
  {
    lci_test::env_guard_t env("LCI_ATTR_NET_SEND_RESERVED_PCT", "half");
    EXPECT_THAT(fatal_message([] { lci::get_g_default_attr(); }),
                HasSubstr("LCI_ATTR_NET_SEND_RESERVED_PCT=half: not a number"));
  }

  lci::runtime_t rt = lci::alloc_runtime_x()
                          .packet_return_threshold(100)
                          .imm_nbits_tag(4)
                          .imm_nbits_rcomp(27)
                          .max_tag(1000)();
  EXPECT_EQ(rt.get_attr_packet_return_threshold(), 100u);
  EXPECT_EQ(rt.get_attr_imm_nbits_tag(), 4);
  EXPECT_EQ(rt.get_attr_imm_nbits_rcomp(), 27);
  // every header carries the whole tag and handle
  EXPECT_EQ(rt.get_attr_max_imm_tag(), 1000u);
  EXPECT_EQ(rt.get_attr_max_rcomp(), (1u << 24) - 1);
  EXPECT_EQ(rt.get_attr_max_imm_rcomp(), rt.get_attr_max_rcomp());
  EXPECT_EQ(rt.get_attr().max_imm_tag, 1000u);
  // a tag past upstream's 4 immediate bits still matches
  {
    int in = 0, out = 42;
    lci::comp_t sync = lci::alloc_sync_x().runtime(rt)();
    lci::status_t st;
    do {
      st = lci::post_recv_x(0, &in, sizeof(in), 999, sync).runtime(rt)();
    } while (st.is_retry());
    lci::post_send_x(0, &out, sizeof(out), 999, lci::COMP_NULL).runtime(rt)();
    if (st.is_posted()) lci::sync_wait_x(sync, &st).runtime(rt)();
    EXPECT_EQ(in, 42);
    EXPECT_EQ(st.tag, 999u);
    lci::free_comp(&sync);
  }

  lci::device_t dev = lci::alloc_device_x()
                          .runtime(rt)
                          .net_send_reserved_pct(0.0)
                          .use_reg_cache(false)();
  EXPECT_EQ(dev.get_attr_net_send_reserved_pct(), 0.0);
  EXPECT_FALSE(dev.get_attr_use_reg_cache());
  EXPECT_FALSE(dev.get_attr().use_reg_cache);
  lci::free_device_x(&dev).runtime(rt)();
  for (double bad : {-0.1, 1.5}) {
    EXPECT_THAT(
        fatal_message([&] {
          lci::alloc_device_x().runtime(rt).net_send_reserved_pct(bad)();
        }),
        HasSubstr("is not a fraction between 0 and 1"))
        << bad;
  }

  for (auto type : {lci::attr_matching_engine_type_t::queue,
                    lci::attr_matching_engine_type_t::map}) {
    lci::matching_engine_t me =
        lci::alloc_matching_engine_x().runtime(rt).matching_engine_type(type)();
    EXPECT_EQ(me.get_attr_matching_engine_type(), type);
    EXPECT_EQ(me.get_attr().matching_engine_type, type);
    lci::free_matching_engine_x(&me).runtime(rt)();
  }
  lci::matching_engine_t me =
      lci::alloc_matching_engine_x().runtime(rt).matching_engine_type(
          "queue")();
  EXPECT_EQ(me.get_attr_matching_engine_type(),
            lci::attr_matching_engine_type_t::queue);
  lci::free_matching_engine_x(&me).runtime(rt)();
  EXPECT_THAT(fatal_message([&] {
                lci::alloc_matching_engine_x().runtime(rt).matching_engine_type(
                    static_cast<lci::attr_matching_engine_type_t>(4))();
              }),
              HasSubstr("matching_engine_type 4 is not a value of "
                        "attr_matching_engine_type_t"));
  lci::free_runtime(&rt);

  // upstream's bound on the split of its 32 immediate bits
  for (auto bits :
       {std::make_pair(16, 16), std::make_pair(-1, 4), std::make_pair(4, -1)}) {
    EXPECT_THAT(fatal_message([&] {
                  lci::alloc_runtime_x()
                      .imm_nbits_tag(bits.first)
                      .imm_nbits_rcomp(bits.second)();
                }),
                HasSubstr("must be at least 0 and sum to at most 31"))
        << bits.first << " " << bits.second;
  }
}

// upstream's handles convert from void* (clients keep get_impl() in a
// void* of their own) and from nullptr
TEST_F(LciTest, HandlesFromVoidPointers)
{
  lci::comp_t cq = lci::alloc_cq();
  void* kept = cq.get_impl();
  lci::comp_t again(kept);
  EXPECT_EQ(again, cq);
  lci::comp_signal(again, lci::status_t(lci::errorcode_t::done));
  EXPECT_TRUE(lci::cq_pop(cq).is_done());
  lci::comp_t none = nullptr;
  EXPECT_TRUE(none.is_empty());
  none.set_impl(cq.get_impl());
  EXPECT_EQ(none, cq);
  lci::free_comp(&cq);
  lci::device_t dev = lci::get_default_device();
  lci::device_t copy(static_cast<void*>(dev.get_impl()));
  EXPECT_EQ(copy, dev);
  lci::device_t::attr_t attr = copy.get_attr();
  EXPECT_EQ(attr.uid, dev.get_attr_uid());
  lci::runtime_t rt = nullptr;
  EXPECT_TRUE(rt.is_empty());
}

// get_g_default_attr / set_g_default_attr: the defaults of every later
// allocation, until the last global_finalize forgets them.
TEST(Compat, GlobalDefaultAttributes)
{
  lci_test::env_guard_t env("LCI_ATTR_NPACKETS", "300");
  lci::global_initialize();
  lci::global_attr_t attr = lci::get_g_default_attr();
  EXPECT_EQ(attr.npackets, 300u);  // the environment over the default
  EXPECT_EQ(attr.packet_size, 8192u);
  EXPECT_EQ(attr.rdv_protocol, lci::attr_rdv_protocol_t::auto_select);
  attr.npackets = 123;
  attr.net_max_sends = 77;
  lci::set_g_default_attr(attr);
  EXPECT_EQ(lci::get_g_default_attr().npackets, 123u);
  lci::global_initialize();  // a second one, counted
  lci::runtime_t rt = lci::alloc_runtime();
  EXPECT_EQ(rt.get_attr_npackets(), 123u);
  lci::packet_pool_t pool = lci::alloc_packet_pool_x().runtime(rt)();
  EXPECT_EQ(pool.get_attr_npackets(), 123u);
  // a setter still wins over the defaults
  lci::device_t dev = lci::alloc_device_x().runtime(rt).net_max_recvs(9)();
  EXPECT_EQ(dev.get_attr_net_max_sends(), 77u);
  EXPECT_EQ(dev.get_attr_net_max_recvs(), 9u);
  lci::free_device_x(&dev).runtime(rt)();
  lci::free_packet_pool_x(&pool).runtime(rt)();
  lci::free_runtime(&rt);
  lci::global_finalize();
  EXPECT_EQ(lci::get_g_default_attr().npackets, 123u);
  lci::global_finalize();  // the last: back to the environment
  EXPECT_EQ(lci::get_g_default_attr().npackets, 300u);
  std::string msg = fatal_message([] { lci::global_finalize(); });
  EXPECT_THAT(msg, HasSubstr("no global_initialize to match"));
  lci_test::env_guard_t bad("LCI_ATTR_NET_MAX_CQES", "many");
  msg = fatal_message([] { lci::global_initialize(); });
  EXPECT_THAT(msg, HasSubstr("LCI_ATTR_NET_MAX_CQES"));
}

// reserve_rcomps hands out consecutive handles that register_rcomp_x(c)
// .rcomp(r) fills; an active message to such a handle reaches its
// completion object.
TEST_F(LciTest, ReservedRemoteCompletions)
{
  lci::comp_t cq = lci::alloc_cq();
  lci::comp_t other = lci::alloc_cq();
  lci::rcomp_t first = lci::reserve_rcomps(3);
  // a plain registration goes after the reserved handles
  lci::rcomp_t plain = lci::register_rcomp(other);
  EXPECT_GE(plain, first + 3);
  EXPECT_EQ(lci::register_rcomp_x(cq).rcomp(first + 1)(), first + 1);
  std::string msg =
      fatal_message([&] { lci::register_rcomp_x(other).rcomp(first + 1)(); });
  EXPECT_THAT(msg, HasSubstr("is registered already"));
  msg =
      fatal_message([&] { lci::register_rcomp_x(other).rcomp(plain + 100)(); });
  EXPECT_THAT(msg, HasSubstr("was not reserved"));
  msg = fatal_message([] { lci::reserve_rcomps(0); });
  EXPECT_THAT(msg, HasSubstr("bad count"));
  msg = fatal_message([] { lci::reserve_rcomps((1u << 24) + 1); });
  EXPECT_THAT(msg, HasSubstr("would pass the largest remote completion"));
  int value = 42;
  lci::status_t st = lci_test::post_retry([&] {
    return lci::post_am(0, &value, sizeof(value), lci::COMP_NULL, first + 1);
  });
  ASSERT_FALSE(st.is_retry());
  lci::status_t got = lci_test::pop_wait(cq);
  ASSERT_TRUE(got.is_done()) << got.error.get_str();
  ASSERT_EQ(got.size, sizeof(value));
  int landed = 0;
  std::memcpy(&landed, got.buffer, sizeof(landed));
  EXPECT_EQ(landed, 42);
  std::free(got.buffer);
  EXPECT_TRUE(lci::cq_pop(other).is_retry());
  // a deregistered reserved handle can be filled again
  lci::deregister_rcomp(first + 1);
  EXPECT_EQ(lci::register_rcomp_x(other).rcomp(first + 1)(), first + 1);
  lci::deregister_rcomp(first + 1);
  lci::deregister_rcomp(plain);
  lci::free_comp(&other);
  lci::free_comp(&cq);
}

// Upstream's settings of a net context are the runtime's: alloc_net_context
// takes the values in force, refuses any other naming the runtime
// attribute, and the handle reports them.
TEST_F(LciTest, NetContextSettings)
{
  lci::runtime_t rt = lci::get_g_runtime();
  lci::net_context_t def = lci::get_default_net_context();
  const std::string provider = def.get_attr_ofi_provider_name();
  auto same = [&] {
    auto x =
        lci::alloc_net_context_x()
            .max_msg_size(def.get_attr_max_msg_size())
            .max_inject_size(def.get_attr_max_inject_size())
            .ibv_gid_idx(rt.get_attr_ibv_gid_idx())
            .ibv_force_gid_auto_select(rt.get_attr_ibv_force_gid_auto_select())
            .ibv_odp_strategy(rt.get_attr_ibv_odp_strategy())
            .ibv_prefetch_strategy(rt.get_attr_ibv_prefetch_strategy())
            .name("same");
    if (!provider.empty()) x = std::move(x).ofi_provider_name(provider);
    return x;
  };
  lci::net_context_t ctx = same()();
  lci::net_context_attr_t a = ctx.get_attr();
  EXPECT_STREQ(a.name, "same");
  EXPECT_EQ(a.ofi_provider_name, provider);
  EXPECT_EQ(a.max_msg_size, def.get_attr_max_msg_size());
  EXPECT_EQ(a.max_inject_size, def.get_attr_max_inject_size());
  EXPECT_EQ(a.support_putimm, def.get_attr_support_putimm());
  EXPECT_EQ(a.ibv_gid_idx, rt.get_attr_ibv_gid_idx());
  EXPECT_EQ(ctx.get_attr_ibv_gid_idx(), rt.get_attr_ibv_gid_idx());
  EXPECT_EQ(a.ibv_force_gid_auto_select,
            rt.get_attr_ibv_force_gid_auto_select());
  EXPECT_EQ(ctx.get_attr_ibv_force_gid_auto_select(),
            rt.get_attr_ibv_force_gid_auto_select());
  EXPECT_EQ(a.ibv_odp_strategy, rt.get_attr_ibv_odp_strategy());
  EXPECT_EQ(ctx.get_attr_ibv_odp_strategy(), rt.get_attr_ibv_odp_strategy());
  EXPECT_EQ(a.ibv_prefetch_strategy, rt.get_attr_ibv_prefetch_strategy());
  EXPECT_EQ(ctx.get_attr_ibv_prefetch_strategy(),
            rt.get_attr_ibv_prefetch_strategy());
  lci::free_net_context(&ctx);

  auto refused = [&](auto&& x, const char* attr) {
    std::string msg = fatal_message([&] { (void)x(); });
    EXPECT_THAT(msg, HasSubstr(std::string("alloc_net_context: ") + attr));
    EXPECT_THAT(msg, HasSubstr(std::string("runtime attribute ") + attr));
  };
  refused(same().max_msg_size(def.get_attr_max_msg_size() + 1), "max_msg_size");
  refused(same().max_inject_size(def.get_attr_max_inject_size() + 1),
          "max_inject_size");
  refused(same().ibv_gid_idx(rt.get_attr_ibv_gid_idx() + 5), "ibv_gid_idx");
  refused(same().ibv_force_gid_auto_select(
              !rt.get_attr_ibv_force_gid_auto_select()),
          "ibv_force_gid_auto_select");
  refused(
      same().ibv_odp_strategy(rt.get_attr_ibv_odp_strategy() ==
                                      lci::attr_ibv_odp_strategy_t::implicit_odp
                                  ? lci::attr_ibv_odp_strategy_t::none
                                  : lci::attr_ibv_odp_strategy_t::implicit_odp),
      "ibv_odp_strategy");
  refused(same().ibv_prefetch_strategy(
              rt.get_attr_ibv_prefetch_strategy() ==
                      lci::attr_ibv_prefetch_strategy_t::prefetch
                  ? lci::attr_ibv_prefetch_strategy_t::none
                  : lci::attr_ibv_prefetch_strategy_t::prefetch),
          "ibv_prefetch_strategy");
  refused(same().ofi_provider_name("no-such-provider"), "ofi_provider_name");
}

// Network contexts and endpoints: handles on the runtime's one network
// context and on a device's one endpoint; posting through an endpoint
// posts on its device; the handles go with their owner.
TEST_F(LciTest, NetContextsAndEndpoints)
{
  lci::net_context_t ctx = lci::get_default_net_context();
  ASSERT_FALSE(ctx.is_empty());
  EXPECT_EQ(lci::get_default_net_context(), ctx);
  lci::runtime_t rt = lci::get_g_runtime();
  EXPECT_EQ(ctx.get_attr_backend(), rt.get_attr_backend());
  EXPECT_EQ(ctx.get_attr_max_msg_size(), rt.get_attr_max_msg_size());
  EXPECT_GT(ctx.get_attr_max_inject_size(), 0u);
  // writeimm is in force exactly when the context has immediate data
  EXPECT_EQ(ctx.get_attr_support_putimm(),
            rt.get_attr_rdv_protocol() == lci::attr_rdv_protocol_t::writeimm);
  lci::net_context_t other = lci::alloc_net_context();
  EXPECT_NE(other, ctx);
  lci::device_t dev = lci::alloc_device_x().net_context(other)();
  lci::free_net_context(&other);
  EXPECT_TRUE(other.is_empty());

  lci::endpoint_t ep = lci::alloc_endpoint_x().device(dev)();
  lci::endpoint_t def = lci::get_default_endpoint_x().device(dev)();
  EXPECT_NE(ep, def);
  EXPECT_EQ(lci::get_default_endpoint_x().device(dev)(), def);
  EXPECT_NE(ep.get_attr_uid(), def.get_attr_uid());
  lci::comp_t cq = lci::alloc_cq();
  uint64_t in = 0, out = 0x1122334455667788;
  ASSERT_TRUE(
      lci::post_recv_x(0, &in, sizeof(in), 3, cq).device(dev)().is_posted());
  lci::status_t st = lci_test::post_retry(
      [&] { return lci::post_send_x(0, &out, 8, 3, cq).endpoint(ep)(); }, dev);
  ASSERT_FALSE(st.is_retry());
  expect_both_done(st, cq, dev);
  EXPECT_EQ(in, out);
  std::string msg = fatal_message([&] {
    lci::post_send_x(0, &out, 8, 3, cq)
        .endpoint(ep)
        .device(lci::get_default_device())();
  });
  EXPECT_THAT(msg, HasSubstr("not of the device given"));
  msg = fatal_message([&] { lci::free_endpoint(&def); });
  EXPECT_THAT(msg, HasSubstr("default endpoint goes with its device"));
  lci::endpoint_t ep_copy = ep;
  lci::free_endpoint(&ep);
  EXPECT_TRUE(ep.is_empty());
  msg = fatal_message([&] { lci::free_endpoint(&ep_copy); });
  EXPECT_THAT(msg, HasSubstr("free_endpoint"));
  lci::endpoint_t left = lci::alloc_endpoint_x().device(dev)();
  lci::free_device(&dev);
  msg = fatal_message([&] { (void)left.get_attr_uid(); });
  EXPECT_THAT(msg, HasSubstr("endpoint_t::get_attr_uid"));
  lci::free_comp(&cq);
  // a runtime's net contexts go with it
  lci::runtime_t rt2 = lci::alloc_runtime();
  lci::net_context_t c2 = lci::get_default_net_context_x().runtime(rt2)();
  lci::free_runtime(&rt2);
  msg = fatal_message([&] { (void)c2.get_attr_backend(); });
  EXPECT_THAT(msg, HasSubstr("net_context_t::get_attr_backend"));
}

}  // namespace

namespace
{

// register_packet_pool / deregister_packet_pool: a device starts with its
// own pool registered; another pool is registered (again is allowed) and
// deregistered once; a pair not registered is refused; a registered pool's
// user packets travel on the device.
TEST_F(LciTest, PacketPoolRegistration)
{
  lci::packet_pool_t pool = lci::alloc_packet_pool_x().npackets(16)();
  lci::device_t dev = lci::alloc_device_x().net_max_recvs(4)();
  lci::register_packet_pool(pool, dev);
  lci::register_packet_pool_x(pool, dev).runtime(lci::get_g_runtime())();

  char* up = static_cast<char*>(lci::get_upacket_x().packet_pool(pool)());
  ASSERT_NE(up, nullptr);
  std::memcpy(up, "registered", 11);
  lci::comp_t cq = lci::alloc_cq();
  char in[16] = {};
  ASSERT_TRUE(lci::post_recv_x(0, in, 11, 5, cq).device(dev)().is_posted());
  lci::status_t st = lci_test::post_retry(
      [&] { return lci::post_send_x(0, up, 11, 5, cq).device(dev)(); }, dev);
  ASSERT_FALSE(st.is_retry());
  expect_both_done(st, cq, dev);
  EXPECT_STREQ(in, "registered");

  lci::deregister_packet_pool(pool, dev);
  std::string msg =
      fatal_message([&] { lci::deregister_packet_pool(pool, dev); });
  EXPECT_THAT(msg, HasSubstr("deregister_packet_pool"));
  EXPECT_THAT(msg, HasSubstr("not registered"));
  // the device's own pool: registered from its allocation, once
  lci::packet_pool_t own = lci::get_default_packet_pool();
  lci::deregister_packet_pool(own, dev);
  msg = fatal_message([&] { lci::deregister_packet_pool(own, dev); });
  EXPECT_THAT(msg, HasSubstr("not registered"));
  lci::register_packet_pool(own, dev);
  // a pool registered with the default device only is not with dev
  lci::register_packet_pool(pool, lci::get_default_device());
  msg = fatal_message([&] { lci::deregister_packet_pool(pool, dev); });
  EXPECT_THAT(msg, HasSubstr("not registered"));
  lci::deregister_packet_pool(pool, lci::get_default_device());
  // positional handles are required
  msg =
      fatal_message([&] { lci::register_packet_pool(pool, lci::device_t()); });
  EXPECT_THAT(msg, HasSubstr("the device is the empty handle"));
  // the device must be of the runtime given
  lci::runtime_t rt2 = lci::alloc_runtime();
  msg = fatal_message(
      [&] { lci::register_packet_pool_x(pool, dev).runtime(rt2)(); });
  EXPECT_THAT(msg, HasSubstr("another runtime"));
  lci::free_runtime(&rt2);
  // freed handles are refused
  lci::device_t dev_copy = dev;
  lci::free_device(&dev);
  msg = fatal_message([&] { lci::register_packet_pool(pool, dev_copy); });
  EXPECT_THAT(msg, HasSubstr("register_packet_pool"));
  lci::register_packet_pool(pool, lci::get_default_device());
  lci::packet_pool_t pool_copy = pool;
  lci::free_packet_pool(&pool);
  msg = fatal_message([&] {
    lci::deregister_packet_pool(pool_copy, lci::get_default_device());
  });
  EXPECT_THAT(msg, HasSubstr("deregister_packet_pool"));
  lci::free_comp(&cq);
}

}  // namespace

namespace
{

// Upstream's small helpers and globals: its default allocator object, the
// dummy node function, the functor-node templates, option_t's accessors
// and the matching policies' boundary marker.
TEST_F(LciTest, UpstreamHelpersAndGlobals)
{
  // the default allocator is g_allocator_default, and setting it restores
  // the default
  EXPECT_EQ(lci::get_allocator(), &lci::g_allocator_default);
  lci::set_allocator(&lci::g_allocator_default);
  EXPECT_EQ(lci::get_allocator(), &lci::g_allocator_default);
  void* p = lci::g_allocator_default.allocate(16);
  ASSERT_NE(p, nullptr);
  lci::g_allocator_default.deallocate(p);

  // a dummy node completes when it runs; the functor templates run and
  // free a functor
  lci::comp_t graph = lci::alloc_graph();
  lci::graph_node_t a = lci::graph_add_node(graph, lci::GRAPH_NODE_DUMMY_CB);
  lci::graph_add_edge(graph, lci::GRAPH_START, a);
  lci::graph_add_edge(graph, a, lci::GRAPH_END);
  lci::graph_start(graph);
  lci::status_t s;
  for (int i = 0; i < 1000 && !(s = lci::graph_test(graph)).is_done(); ++i)
    lci::progress();
  EXPECT_TRUE(s.is_done());
  lci::free_comp(&graph);
  struct count_t {
    int* n;
    lci::errorcode_t operator()() const
    {
      ++*n;
      return lci::errorcode_t::posted;
    }
  };
  int n = 0;
  auto* f = new count_t{&n};
  EXPECT_TRUE(lci::graph_execute_op_fn<count_t>(f).is_posted());
  EXPECT_EQ(n, 1);
  lci::graph_free_op_fn<count_t>(f);

  lci::option_t<int> unset, set(7), flagged(3, false);
  int v = 0;
  EXPECT_FALSE(unset.get_set_value(&v));
  EXPECT_EQ(unset.get_value_or(5), 5);
  EXPECT_TRUE(set.get_set_value(&v));
  EXPECT_EQ(v, 7);
  EXPECT_EQ(static_cast<int>(set), 7);
  EXPECT_FALSE(flagged.is_set());
  EXPECT_EQ(flagged.get_value(), 3);

  // max is not a policy
  uint64_t x = 0;
  EXPECT_THAT(fatal_message([&] {
                lci::post_send_x(0, &x, 8, 1, lci::COMP_NULL)
                    .matching_policy(lci::matching_policy_t::max)();
              }),
              HasSubstr("matching_policy 4 is not a policy"));
  EXPECT_THAT(fatal_message([&] {
                lci::post_recv_x(0, &x, 8, 1, lci::COMP_NULL)
                    .matching_policy(lci::matching_policy_t::max)();
              }),
              HasSubstr("matching_policy 4 is not a policy"));
}

}  // namespace

namespace
{

using ::testing::AllOf;

// A name given as a temporary string: the resource keeps its own copy.
std::string temp_name(const char* base) { return std::string(base) + "-x"; }

// Every resource has upstream's name and user_context attributes: the
// allocating call's .name() (copied: the caller's string may go) and
// .user_context(), else DEFAULT_NAME ("unnamed") and nullptr.
TEST_F(LciTest, ResourceNamesAndUserContexts)
{
  EXPECT_STREQ(lci::DEFAULT_NAME, "unnamed");
  int ctx = 0;
  void* uc = &ctx;
  lci::runtime_t g = lci::get_g_runtime();
  EXPECT_STREQ(g.get_attr_name(), "unnamed");
  EXPECT_EQ(g.get_attr_user_context(), nullptr);
  EXPECT_STREQ(g.get_attr().name, "unnamed");

  lci::runtime_t rt =
      lci::alloc_runtime_x().name(temp_name("rt").c_str()).user_context(uc)();
  EXPECT_STREQ(rt.get_attr_name(), "rt-x");
  EXPECT_EQ(rt.get_attr_user_context(), uc);
  EXPECT_EQ(rt.get_attr().user_context, uc);
  // the runtime's default resources are not named after it
  EXPECT_STREQ(lci::get_default_device_x().runtime(rt)().get_attr_name(),
               "unnamed");
  lci::free_runtime(&rt);

  lci::device_t dev =
      lci::alloc_device_x().name(temp_name("dev").c_str()).user_context(uc)();
  EXPECT_STREQ(dev.get_attr_name(), "dev-x");
  EXPECT_EQ(dev.get_attr_user_context(), uc);
  // devices have upstream's uid: unique, reported, not settable
  EXPECT_GE(dev.get_attr_uid(), 0);
  EXPECT_EQ(dev.get_attr().uid, dev.get_attr_uid());
  EXPECT_NE(dev.get_attr_uid(), lci::get_default_device().get_attr_uid());
  EXPECT_STREQ(lci::get_default_device().get_attr_name(), "unnamed");
  lci::packet_pool_t pool = lci::alloc_packet_pool_x()
                                .npackets(64)
                                .name(temp_name("pool").c_str())
                                .user_context(uc)();
  EXPECT_STREQ(pool.get_attr_name(), "pool-x");
  EXPECT_EQ(pool.get_attr_user_context(), uc);
  lci::matching_engine_t me = lci::alloc_matching_engine_x()
                                  .name(temp_name("me").c_str())
                                  .user_context(uc)();
  EXPECT_STREQ(me.get_attr_name(), "me-x");
  EXPECT_EQ(me.get_attr().user_context, uc);

  struct comp_case_t {
    const char* what;
    lci::comp_t comp;
  };
  auto handler = [](lci::status_t) {};
  comp_case_t comps[] = {
      {"sync-x",
       lci::alloc_sync_x().name(temp_name("sync").c_str()).user_context(uc)()},
      {"cq-x",
       lci::alloc_cq_x().name(temp_name("cq").c_str()).user_context(uc)()},
      {"counter-x", lci::alloc_counter_x()
                        .name(temp_name("counter").c_str())
                        .user_context(uc)()},
      {"handler-x", lci::alloc_handler_x(handler)
                        .name(temp_name("handler").c_str())
                        .user_context(uc)()},
      {"graph-x", lci::alloc_graph_x()
                      .name(temp_name("graph").c_str())
                      .user_context(uc)()},
  };
  for (comp_case_t& c : comps) {
    SCOPED_TRACE(c.what);
    EXPECT_STREQ(c.comp.get_attr_name(), c.what);
    EXPECT_EQ(c.comp.get_attr_user_context(), uc);
    EXPECT_EQ(c.comp.get_attr().user_context, uc);
    lci::free_comp(&c.comp);
  }
  lci::comp_t plain = lci::alloc_cq();
  EXPECT_STREQ(plain.get_attr_name(), "unnamed");
  EXPECT_EQ(plain.get_attr_user_context(), nullptr);
  lci::free_comp(&plain);
  // a user's completion object starts unnamed and may set its attributes
  struct mine_t : lci::comp_impl_t {
    void signal(lci::status_t) override {}
  } mine;
  lci::comp_t mine_comp(&mine);
  EXPECT_STREQ(mine_comp.get_attr_name(), "unnamed");
  mine.attr.user_context = uc;
  EXPECT_EQ(mine_comp.get_attr_user_context(), uc);
  lci::comp_impl_t::attr_t a = {"given", nullptr};
  struct named_t : lci::comp_impl_t {
    explicit named_t(const attr_t& a) : lci::comp_impl_t(a) {}
    void signal(lci::status_t) override {}
  } named(a);
  EXPECT_STREQ(lci::comp_t(&named).get_attr_name(), "given");
  std::string msg = fatal_message([] { (void)lci::COMP_NULL.get_attr(); });
  EXPECT_THAT(msg, HasSubstr("comp_t::get_attr"));
  msg = fatal_message([] { (void)lci::COMP_NULL_RETRY.get_attr_name(); });
  EXPECT_THAT(msg, HasSubstr("empty"));

  lci::endpoint_t ep = lci::alloc_endpoint_x()
                           .device(dev)
                           .name(temp_name("ep").c_str())
                           .user_context(uc)();
  EXPECT_STREQ(ep.get_attr_name(), "ep-x");
  EXPECT_EQ(ep.get_attr_user_context(), uc);
  EXPECT_EQ(ep.get_attr().uid, ep.get_attr_uid());
  EXPECT_STREQ(lci::get_default_endpoint_x().device(dev)().get_attr_name(),
               "unnamed");
  lci::net_context_t nc = lci::alloc_net_context_x()
                              .name(temp_name("nc").c_str())
                              .user_context(uc)();
  EXPECT_STREQ(nc.get_attr_name(), "nc-x");
  EXPECT_EQ(nc.get_attr().user_context, uc);
  EXPECT_STREQ(lci::get_default_net_context().get_attr_name(), "unnamed");
  lci::free_net_context(&nc);

  char buf[64];
  lci::mr_t mr = lci::register_memory(buf, sizeof(buf));
  EXPECT_STREQ(mr.get_attr_name(), "unnamed");
  EXPECT_EQ(mr.get_attr().user_context, nullptr);
  lci::deregister_memory(&mr);
  msg = fatal_message([&] { (void)mr.get_attr_name(); });
  EXPECT_THAT(msg, HasSubstr("mr_t::get_attr_name"));

  lci::free_device(&dev);
  msg = fatal_message([&] { (void)ep.get_attr_name(); });
  EXPECT_THAT(msg, HasSubstr("endpoint_t::get_attr_name"));
  lci::free_matching_engine(&me);
  lci::free_packet_pool(&pool);
}

// Upstream's .runtime() on the calls on completion objects and
// registrations: a live runtime is accepted (the object belongs to none, a
// registration to its own runtime), a freed one is refused naming the call.
TEST_F(LciTest, RuntimeOnCompletionCalls)
{
  lci::runtime_t g = lci::get_g_runtime();
  lci::comp_t cq = lci::alloc_cq();
  lci::comp_signal_x(cq, lci::status_t(nullptr)).runtime(g)();
  EXPECT_TRUE(lci::cq_pop_x(cq).runtime(g)().is_done());
  EXPECT_TRUE(lci::cq_pop_x(cq).runtime(g)().is_retry());
  lci::comp_t counter = lci::alloc_counter();
  lci::counter_set_x(counter, 5).runtime(g)();
  EXPECT_EQ(lci::counter_get_x(counter).runtime(g)(), 5);
  lci::comp_t sync = lci::alloc_sync();
  EXPECT_FALSE(lci::sync_test_x(sync, nullptr).runtime(g)());
  lci::comp_t graph = lci::alloc_graph();
  lci::graph_node_t node =
      lci::graph_add_node_x(graph, lci::GRAPH_NODE_DUMMY_CB).runtime(g)();
  lci::graph_add_edge_x(graph, lci::GRAPH_START, node).runtime(g)();
  lci::graph_add_edge_x(graph, node, lci::GRAPH_END).runtime(g)();
  lci::graph_start_x(graph).runtime(g)();
  EXPECT_TRUE(lci::graph_test_x(graph).runtime(g)().is_done());
  char buf[16];
  lci::mr_t mr = lci::register_memory(buf, sizeof(buf));
  EXPECT_EQ(lci::get_rmr_x(mr).runtime(g)().size, sizeof(buf));

  lci::runtime_t other = lci::alloc_runtime();
  std::string msg =
      fatal_message([&] { (void)lci::get_rmr_x(mr).runtime(other)(); });
  EXPECT_THAT(msg, HasSubstr("another runtime"));
  lci::runtime_t gone = other;
  lci::free_runtime(&other);
  msg = fatal_message([&] { (void)lci::cq_pop_x(cq).runtime(gone)(); });
  EXPECT_THAT(msg, HasSubstr("cq_pop"));
  msg =
      fatal_message([&] { (void)lci::counter_get_x(counter).runtime(gone)(); });
  EXPECT_THAT(msg, HasSubstr("counter_get"));
  msg = fatal_message([&] { lci::free_comp_x(&graph).runtime(gone)(); });
  EXPECT_THAT(msg, HasSubstr("free_comp"));
  EXPECT_FALSE(graph.is_empty());  // refused before anything was freed

  lci::deregister_memory(&mr);
  lci::free_comp_x(&graph).runtime(g)();
  lci::free_comp(&sync);
  lci::free_comp(&counter);
  lci::free_comp(&cq);
}

// Upstream's .endpoint() on collectives and progress: they run on the
// endpoint's device (a device given too must be that one); .comp_semantic()
// on barrier and alltoall.
TEST_F(LciTest, CollectivesAndProgressOnAnEndpoint)
{
  lci::device_t dev = lci::alloc_device();
  lci::endpoint_t ep = lci::alloc_endpoint_x().device(dev)();
  lci::barrier_x().endpoint(ep)();
  lci::barrier_x().endpoint(ep).comp_semantic(lci::comp_semantic_t::network)();
  int in = 21, out = 0;
  auto sum = [](const void* l, const void* r, void* d, size_t n) {
    for (size_t i = 0; i < n; ++i)
      static_cast<int*>(d)[i] =
          static_cast<const int*>(l)[i] + static_cast<const int*>(r)[i];
  };
  lci::allreduce_x(&in, &out, 1, sizeof(int), sum).endpoint(ep)();
  EXPECT_EQ(out, 21);
  out = 0;
  lci::alltoall_x(&in, &out, sizeof(int))
      .endpoint(ep)
      .comp_semantic(lci::comp_semantic_t::memory)();
  EXPECT_EQ(out, 21);
  lci::comp_t sync = lci::alloc_sync();
  lci::broadcast_x(&in, sizeof(in), 0).endpoint(ep).comp(sync)();
  while (!lci::sync_test(sync, nullptr)) lci::progress_x().endpoint(ep)();
  lci::free_comp(&sync);
  lci::error_t e = lci::progress_x().endpoint(ep)();
  EXPECT_TRUE(e.is_done() || e.is_retry());

  std::string msg = fatal_message([&] {
    lci::barrier_x().endpoint(ep).device(lci::get_default_device())();
  });
  EXPECT_THAT(
      msg, AllOf(HasSubstr("barrier"), HasSubstr("not of the device given")));
  msg = fatal_message([&] {
    (void)lci::progress_x().endpoint(ep).device(lci::get_default_device())();
  });
  EXPECT_THAT(
      msg, AllOf(HasSubstr("progress"), HasSubstr("not of the device given")));
  msg = fatal_message([&] {
    lci::barrier_x().comp_semantic(static_cast<lci::comp_semantic_t>(7))();
  });
  EXPECT_THAT(msg, HasSubstr("barrier: comp_semantic 7"));
  lci::free_device(&dev);
}

}  // namespace
