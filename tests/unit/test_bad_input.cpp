// The bad input matrix (docs/RELIABILITY.md): every public operation of
// src/api/spec.py with each class of bad argument that applies to it. Each
// row calls the operation with one bad argument and expects an
// lci::fatal_error whose message names the call (and the bad value where
// it is a number); then a valid send/recv to self must still work.
//
// Classes: rank (out of range), null (null buffer with a size, null
// pointer argument), oversize, tag (above max_tag), rcomp (out of range or
// not registered), freed (a handle used after its free), foreign (a
// pointer this library never allocated, or a handle of another runtime or
// graph), finalized (a call after g_runtime_fina, or with a handle of a
// freed runtime), double_free, value (another bad value: enum, attribute).
// Excluded (undefined, see docs/RELIABILITY.md): racing uses of one
// resource from several threads; a freed completion object passed where
// user-defined completion objects are allowed (local_comp, comp_signal,
// register_rcomp, alloc_graph's comp), which the library cannot tell from a
// live user object.
//
// The test reads src/api/spec.py and fails if an operation has no row (or
// no documented reason to have none), so the matrix cannot fall behind.
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "lci_test_common.hpp"

namespace
{

using lci_test::expect_sendrecv_works;
using lci_test::fatal_message;
using lci_test::LciTest;
using ::testing::AnyOf;
using ::testing::HasSubstr;

struct row_t {
  std::string op;     // the operation (spec.py name)
  std::string klass;  // the class of bad argument
  std::string names;  // the message must contain this (the call)
  std::string value;  // ... and this, when not empty (the bad value)
  std::function<void()> call;
};

// Operations that take no argument that could be bad, with the reason.
const std::map<std::string, std::string> kNoBadInput = {
    {"global_initialize",
     "no argument; fails only for a bad LCI_ATTR_* variable "
     "(test_compat.cpp, GlobalDefaultAttributes)"},
    {"get_g_default_attr",
     "no argument; fails only for a bad LCI_ATTR_* variable, like "
     "global_initialize"},
    {"set_g_default_attr",
     "takes a plain struct; each value is checked by the allocation that "
     "uses it (the value rows of the alloc_* operations)"},
    {"get_g_runtime",
     "no argument; after g_runtime_fina it returns the empty handle, which "
     "every call taking it rejects (finalized rows)"},
};

struct tally_t {
  size_t rows = 0;
  std::set<std::string> ops;
  std::set<std::string> classes;
  std::set<std::pair<std::string, std::string>> cells;
};
tally_t& tally()
{
  static tally_t t;
  return t;
}

void run_rows(const std::vector<row_t>& rows, bool check_works = true)
{
  for (const row_t& r : rows) {
    SCOPED_TRACE(r.op + " / " + r.klass);
    std::string msg = fatal_message(r.call);
    EXPECT_THAT(msg, HasSubstr(r.names)) << r.op << " / " << r.klass;
    if (!r.value.empty()) {
      EXPECT_THAT(msg, HasSubstr(r.value));
    }
    if (check_works) expect_sendrecv_works();
    tally_t& t = tally();
    ++t.rows;
    t.ops.insert(r.op);
    t.classes.insert(r.klass);
    t.cells.insert({r.op, r.klass});
  }
}

std::string ptr(const void* p)
{
  std::ostringstream os;
  os << p;
  return os.str();
}

// A pointer no allocation of this library returned (a static object).
struct fake_t {
  alignas(64) char bytes[4096];
} g_fake;
void* fake() { return &g_fake; }

lci::status_t node_fn(void*) { return lci::errorcode_t::done; }
void sum_op(const void* l, const void* r, void* d, size_t n)
{
  for (size_t i = 0; i < n; ++i)
    static_cast<char*>(d)[i] =
        static_cast<const char*>(l)[i] + static_cast<const char*>(r)[i];
}

const std::string PC = "post_comm";  // the sugar operations report post_comm

// Arguments shared by the rows of the communication operations.
TEST_F(LciTest, Communication)
{
  char buf[64] = {};
  const size_t huge = size_t(1) << 63;
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rc = lci::register_rcomp(cq);
  lci::comp_t freed_cq = lci::alloc_cq();
  lci::free_comp(&freed_cq);
  lci::comp_t freed_copy = lci::alloc_cq();
  lci::comp_t fc = freed_copy;
  lci::free_comp(&fc);
  lci::mr_t mr = lci::register_memory(buf, sizeof(buf));
  lci::rmr_t rmr = lci::get_rmr(mr);
  lci::mr_t dead_mr = lci::register_memory(buf, 8);
  lci::mr_t dead_copy = dead_mr;
  lci::deregister_memory(&dead_mr);
  lci::device_t dead_dev = lci::alloc_device_x().net_max_recvs(4)();
  lci::device_t dead_dev_copy = dead_dev;
  lci::free_device(&dead_dev);
  lci::matching_engine_t dead_me =
      lci::alloc_matching_engine_x().num_buckets(4)();
  lci::matching_engine_t dead_me_copy = dead_me;
  lci::free_matching_engine(&dead_me);
  lci::packet_pool_t dead_pool = lci::alloc_packet_pool_x().npackets(8)();
  lci::packet_pool_t dead_pool_copy = dead_pool;
  lci::free_packet_pool(&dead_pool);
  lci::device_t foreign_dev(reinterpret_cast<lci::device_impl_t*>(fake()));
  lci::matching_engine_t foreign_me(
      reinterpret_cast<lci::matching_engine_impl_t*>(fake()));
  lci::packet_pool_t foreign_pool(
      reinterpret_cast<lci::packet_pool_impl_t*>(fake()));
  lci::mr_t foreign_mr(reinterpret_cast<lci::mr_impl_t*>(fake()));
  lci::runtime_t foreign_rt(reinterpret_cast<lci::runtime_impl_t*>(fake()));
  // a second runtime: its handles are foreign to the global one
  lci::runtime_t rt2 = lci::alloc_runtime();
  lci::device_t dev2 = lci::get_default_device_x().runtime(rt2)();
  lci::matching_engine_t me2 =
      lci::get_default_matching_engine_x().runtime(rt2)();
  lci::mr_t mr2 = lci::register_memory_x(buf, sizeof(buf)).runtime(rt2)();
  lci::rmr_t rmr2 = lci::get_rmr(mr2);

  std::vector<row_t> rows;
  auto add = [&](std::string op, std::string klass, std::string names,
                 std::string value, std::function<void()> f) {
    rows.push_back({op, klass, names, value, f});
  };
  using lci::COMP_NULL;
  // post_comm and its sugar: rank, null, oversize, tag, rcomp
  add("post_comm", "rank", PC, "rank 3",
      [&] { lci::post_comm(lci::direction_t::OUT, 3, buf, 8, COMP_NULL); });
  add("post_comm", "rank", PC, "rank -5",
      [&] { lci::post_comm(lci::direction_t::IN, -5, buf, 8, cq); });
  add("post_comm", "null", PC, "null buffer",
      [&] { lci::post_comm(lci::direction_t::OUT, 0, nullptr, 8, COMP_NULL); });
  add("post_comm", "oversize", PC, std::to_string(huge),
      [&] { lci::post_comm(lci::direction_t::OUT, 0, buf, huge, COMP_NULL); });
  // lists of buffers: a null buffer in the list, too many, an empty
  // remote buffer, a list beside a local buffer
  add("post_comm", "null", PC, "buffers[1] is a null buffer with size 8", [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, nullptr, 0, COMP_NULL)
        .buffers({lci::buffer_t(buf, 8), lci::buffer_t(nullptr, 8)})();
  });
  add("post_comm", "oversize", PC, "exceeds MAX_BUFFERS", [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, nullptr, 0, COMP_NULL)
        .buffers(lci::buffers_t(lci::MAX_BUFFERS + 1, lci::buffer_t(buf, 1)))();
  });
  add("post_get", "value", PC, "not made by get_rmr", [&] {
    lci::post_get_x(0, nullptr, 0, COMP_NULL, 0, lci::RMR_NULL)
        .buffers({lci::buffer_t(buf, 8)})
        .rbuffers({lci::rbuffer_t(0)})();
  });
  add("post_recv", "value", PC, "must be nullptr and 0", [&] {
    lci::post_recv_x(0, buf, 8, 1, cq).buffers({lci::buffer_t(buf, 8)})();
  });
  add("post_comm", "tag", PC, "max_tag", [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, COMP_NULL)
        .tag(lci::ANY_TAG)();
  });
  add("post_comm", "rcomp", PC, "remote_comp", [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, COMP_NULL)
        .remote_comp(1u << 24)();
  });
  add("post_comm", "rcomp", PC, "remote_comp", [&] {
    lci::post_comm_x(lci::direction_t::IN, 0, buf, 8, cq).remote_comp(rc)();
  });
  add("post_comm", "value", PC, "comp_semantic", [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, COMP_NULL)
        .comp_semantic(static_cast<lci::comp_semantic_t>(7))();
  });
  add("post_comm", "value", PC, "COMP_NULL_RETRY", [&] {
    lci::post_comm(lci::direction_t::IN, 0, buf, 8, lci::COMP_NULL_RETRY);
  });
  add("post_comm", "freed", PC, ptr(dead_dev_copy.get_impl()), [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, COMP_NULL)
        .device(dead_dev_copy)();
  });
  add("post_comm", "freed", PC, ptr(dead_me_copy.get_impl()), [&] {
    lci::post_comm_x(lci::direction_t::IN, 0, buf, 8, cq)
        .matching_engine(dead_me_copy)();
  });
  add("post_comm", "freed", PC, ptr(dead_pool_copy.get_impl()), [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, COMP_NULL)
        .packet_pool(dead_pool_copy)();
  });
  add("post_comm", "freed", PC, ptr(dead_copy.get_impl()), [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, COMP_NULL)
        .mr(dead_copy)();
  });
  add("post_comm", "foreign", PC, ptr(fake()), [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, COMP_NULL)
        .device(foreign_dev)();
  });
  add("post_comm", "foreign", PC, ptr(fake()), [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, COMP_NULL)
        .runtime(foreign_rt)();
  });
  add("post_comm", "foreign", PC, "another runtime", [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, COMP_NULL)
        .runtime(lci::get_g_runtime())
        .device(dev2)();
  });
  add("post_comm", "foreign", PC, "another runtime", [&] {
    lci::post_comm_x(lci::direction_t::IN, 0, buf, 8, cq)
        .matching_engine(me2)();
  });
  add("post_comm", "foreign", PC, "another runtime", [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, COMP_NULL).mr(mr2)();
  });
  add("post_comm", "foreign", PC, ptr(fake()), [&] {
    lci::post_comm_x(lci::direction_t::IN, 0, buf, 8, cq)
        .matching_engine(foreign_me)();
  });
  add("post_comm", "foreign", PC, ptr(fake()), [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, COMP_NULL)
        .packet_pool(foreign_pool)();
  });
  add("post_comm", "foreign", PC, ptr(fake()), [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, COMP_NULL)
        .mr(foreign_mr)();
  });
  add("post_send", "rank", PC, "rank 1",
      [&] { lci::post_send(1, buf, 8, 1, COMP_NULL); });
  add("post_send", "null", PC, "null buffer",
      [&] { lci::post_send(0, nullptr, 1, 1, COMP_NULL); });
  add("post_send", "oversize", PC, std::to_string(huge),
      [&] { lci::post_send(0, buf, huge, 1, COMP_NULL); });
  add("post_send", "tag", PC, "max_tag",
      [&] { lci::post_send(0, buf, 8, lci::ANY_TAG, COMP_NULL); });
  add("post_send", "freed", PC, "device", [&] {
    lci::post_send_x(0, buf, 8, 1, COMP_NULL).device(dead_dev_copy)();
  });
  add("post_recv", "rank", PC, "rank 2",
      [&] { lci::post_recv(2, buf, 8, 1, cq); });
  add("post_recv", "null", PC, "null buffer",
      [&] { lci::post_recv(0, nullptr, 8, 1, cq); });
  add("post_recv", "oversize", PC, std::to_string(huge),
      [&] { lci::post_recv(0, buf, huge, 1, cq); });
  // max_tag is ANY_TAG - 1 by default, and ANY_TAG is a receive's
  // wildcard: a runtime with a lower max_tag shows the check
  lci::runtime_t rt3 = lci::alloc_runtime_x().max_tag(100)();
  add("post_recv", "tag", PC, "max_tag",
      [&] { lci::post_recv_x(0, buf, 8, 101, cq).runtime(rt3)(); });
  add("post_recv", "freed", PC, "matching engine", [&] {
    lci::post_recv_x(0, buf, 8, 1, cq).matching_engine(dead_me_copy)();
  });
  add("post_am", "rank", PC, "rank 9",
      [&] { lci::post_am(9, buf, 8, COMP_NULL, rc); });
  add("post_am", "null", PC, "null buffer",
      [&] { lci::post_am(0, nullptr, 8, COMP_NULL, rc); });
  add("post_am", "oversize", PC, std::to_string(huge),
      [&] { lci::post_am(0, buf, huge, COMP_NULL, rc); });
  add("post_am", "rcomp", PC, "remote_comp",
      [&] { lci::post_am(0, buf, 8, COMP_NULL, lci::RCOMP_NULL - 1); });
  add("post_am", "tag", PC, "max_tag", [&] {
    lci::post_am_x(0, buf, 8, COMP_NULL, rc).runtime(rt3).tag(1000)();
  });
  // an active message to a remote completion that is not registered at the
  // target (here: this process) is refused when it arrives
  add("post_am", "rcomp", "progress", "not registered", [&] {
    lci::post_am(0, buf, 8, COMP_NULL, rc + 1000);
    for (int i = 0; i < 1000000; ++i) lci::progress();
  });
  add("post_put", "rank", PC, "rank 4",
      [&] { lci::post_put(4, buf, 8, COMP_NULL, 0, rmr); });
  add("post_put", "null", PC, "null buffer",
      [&] { lci::post_put(0, nullptr, 8, COMP_NULL, 0, rmr); });
  add("post_put", "oversize", "post_comm (put)", "outside",
      [&] { lci::post_put(0, buf, sizeof(buf) + 1, COMP_NULL, 0, rmr); });
  add("post_put", "oversize", "post_comm (put)", "outside",
      [&] { lci::post_put(0, buf, 8, COMP_NULL, sizeof(buf) - 4, rmr); });
  add("post_put", "rcomp", PC, "remote_comp", [&] {
    lci::post_put_x(0, buf, 8, COMP_NULL, 0, rmr).remote_comp(1u << 25)();
  });
  add("post_put", "foreign", "post_comm (put)", "runtime",
      [&] { lci::post_put(0, buf, 8, COMP_NULL, 0, rmr2); });
  add("post_put", "tag", PC, "max_tag", [&] {
    lci::post_put_x(0, buf, 8, COMP_NULL, 0, rmr).tag(lci::ANY_TAG)();
  });
  add("post_get", "rank", PC, "rank 4",
      [&] { lci::post_get(4, buf, 8, COMP_NULL, 0, rmr); });
  add("post_get", "null", PC, "null buffer",
      [&] { lci::post_get(0, nullptr, 8, COMP_NULL, 0, rmr); });
  add("post_get", "oversize", "post_comm (get)", "outside",
      [&] { lci::post_get(0, buf, sizeof(buf) * 2, COMP_NULL, 0, rmr); });
  add("post_get", "foreign", "post_comm (get)", "runtime",
      [&] { lci::post_get(0, buf, 8, COMP_NULL, 0, rmr2); });
  {
    // the rmr of a region deregistered since
    lci::mr_t gone = lci::register_memory(buf, 16);
    lci::rmr_t gone_rmr = lci::get_rmr(gone);
    lci::deregister_memory(&gone);
    add("post_get", "freed", "post_comm (get)", "deregistered",
        [=, &buf] { lci::post_get(0, buf, 8, COMP_NULL, 0, gone_rmr); });
  }
  // progress, test_drained, wait_drained: handles
  for (const char* op : {"progress", "test_drained", "wait_drained"}) {
    std::string o = op;
    auto call = [o](lci::runtime_t r, lci::device_t d) {
      if (o == "progress") lci::progress_x().runtime(r).device(d)();
      if (o == "test_drained") lci::test_drained_x().runtime(r).device(d)();
      if (o == "wait_drained") lci::wait_drained_x().runtime(r).device(d)();
    };
    add(o, "freed", o, ptr(dead_dev_copy.get_impl()),
        [=] { call(lci::runtime_t(), dead_dev_copy); });
    add(o, "foreign", o, ptr(fake()),
        [=] { call(lci::runtime_t(), foreign_dev); });
    add(o, "foreign", o, ptr(fake()),
        [=] { call(foreign_rt, lci::device_t()); });
    add(o, "foreign", o, "another runtime",
        [=] { call(lci::get_g_runtime(), dev2); });
  }
  // the raw network layer (rank 0 of 1 here): handles, ranks, buffers,
  // sizes, remote regions; a raw receive on a device that pre-posts its own
  add("net_poll_cq", "freed", "net_poll_cq", ptr(dead_dev_copy.get_impl()),
      [&] { lci::net_poll_cq_x(1, nullptr).device(dead_dev_copy)(); });
  add("net_poll_cq", "foreign", "net_poll_cq", ptr(fake()),
      [&] { lci::net_poll_cq_x(1, nullptr).device(foreign_dev)(); });
  add("net_post_recv", "null", "net_post_recv", "null buffer",
      [&] { lci::net_post_recv(nullptr, 8, lci::MR_HOST); });
  add("net_post_recv", "value", "net_post_recv", "net_max_recvs",
      [&] { lci::net_post_recv(buf, 8, lci::MR_HOST); });
  add("net_post_sends", "rank", "net_post_sends", "rank 3",
      [&] { lci::net_post_sends(3, buf, 8); });
  add("net_post_sends", "value", "net_post_sends", "imm_data 1",
      [&] { lci::net_post_sends_x(0, buf, 8).imm_data(1)(); });
  add("net_post_send", "null", "net_post_send", "null buffer",
      [&] { lci::net_post_send(0, nullptr, 8, lci::MR_HOST); });
  add("net_post_send", "freed", "net_post_send", ptr(dead_copy.get_impl()),
      [&] { lci::net_post_send(0, buf, 8, dead_copy); });
  add("net_post_puts", "oversize", "net_post_puts", "max_inject_size",
      [&] { lci::net_post_puts(0, buf, 100, 0, rmr); });
  add("net_post_put", "null", "net_post_put", "empty rmr",
      [&] { lci::net_post_put(0, buf, 8, lci::MR_HOST, 0, lci::RMR_NULL); });
  add("net_post_putImms", "rank", "net_post_putImms", "rank -1",
      [&] { lci::net_post_putImms(-1, buf, 8, 0, rmr); });
  add("net_post_putImm", "oversize", "net_post_putImm", "outside",
      [&] { lci::net_post_putImm(0, buf, 8, mr, sizeof(buf), rmr); });
  add("net_post_get", "foreign", "net_post_get", "runtime",
      [&] { lci::net_post_get(0, buf, 8, lci::MR_HOST, 0, rmr2); });
  run_rows(rows);
  lci::free_runtime(&rt3);
  lci::deregister_memory(&mr2);
  lci::free_runtime(&rt2);
  lci::deregister_memory(&mr);
  lci::free_comp(&cq);
}

TEST_F(LciTest, Resources)
{
  std::vector<row_t> rows;
  auto add = [&](std::string op, std::string klass, std::string names,
                 std::string value, std::function<void()> f) {
    rows.push_back({op, klass, names, value, f});
  };
  lci::runtime_t foreign_rt(reinterpret_cast<lci::runtime_impl_t*>(fake()));
  lci::device_t foreign_dev(reinterpret_cast<lci::device_impl_t*>(fake()));
  lci::packet_pool_t foreign_pool(
      reinterpret_cast<lci::packet_pool_impl_t*>(fake()));
  lci::matching_engine_t foreign_me(
      reinterpret_cast<lci::matching_engine_impl_t*>(fake()));
  lci::mr_t foreign_mr(reinterpret_cast<lci::mr_impl_t*>(fake()));
  const std::string F = ptr(fake());

  // runtimes
  add("alloc_runtime", "value", "alloc_runtime", "max_tag",
      [] { lci::alloc_runtime_x().max_tag(lci::ANY_TAG)(); });
#if LCI_TEST_HAVE_OFI
  add("alloc_runtime", "value", "alloc_runtime", "nonexistent",
      [] { lci::alloc_runtime_x().ofi_provider_name("nonexistent")(); });
#else
  // no libfabric to refuse a provider: a backend this build lacks instead
  add("alloc_runtime", "value", "alloc_runtime", "backend 'ofi'",
      [] { lci::alloc_runtime_x().backend("ofi")(); });
#endif
  add("alloc_runtime", "value", "alloc_runtime", "packet_size",
      [] { lci::alloc_runtime_x().packet_size(4)(); });
  add("alloc_runtime", "value", "alloc_runtime", "npackets",
      [] { lci::alloc_runtime_x().npackets(0)(); });
  add("alloc_runtime", "value", "alloc_runtime", "shm_ring_size", [] {
    lci::alloc_runtime_x().backend("shm").shm_ring_size(size_t(1) << 28)();
  });
  add("free_runtime", "null", "free_runtime", "null",
      [] { lci::free_runtime(nullptr); });
  add("free_runtime", "foreign", "free_runtime", F, [=] {
    lci::runtime_t r = foreign_rt;
    lci::free_runtime(&r);
  });
  {
    lci::runtime_t r = lci::alloc_runtime();
    lci::runtime_t copy = r;
    lci::free_runtime(&r);
    add("free_runtime", "double_free", "free_runtime", ptr(copy.get_impl()),
        [=] {
          lci::runtime_t c = copy;
          lci::free_runtime(&c);
        });
    add("free_runtime", "double_free", "free_runtime", "empty handle", [=] {
      lci::runtime_t c = r;
      lci::free_runtime(&c);
    });
  }
  add("get_rank_me", "foreign", "get_rank_me", F,
      [=] { lci::get_rank_me_x().runtime(foreign_rt)(); });
  add("get_rank_n", "foreign", "get_rank_n", F,
      [=] { lci::get_rank_n_x().runtime(foreign_rt)(); });
  add("is_peer_failed", "foreign", "is_peer_failed", F,
      [=] { lci::is_peer_failed_x(0).runtime(foreign_rt)(); });
  add("is_peer_failed", "rank", "is_peer_failed", "rank 1",
      [] { lci::is_peer_failed(1); });
  add("is_peer_failed", "rank", "is_peer_failed", "rank -1",
      [] { lci::is_peer_failed(-1); });
  // devices
  add("alloc_device", "foreign", "alloc_device", F,
      [=] { lci::alloc_device_x().packet_pool(foreign_pool)(); });
  add("alloc_device", "foreign", "alloc_device", F,
      [=] { lci::alloc_device_x().runtime(foreign_rt)(); });
  add("alloc_device", "value", "alloc_device", "net_max_sends",
      [] { lci::alloc_device_x().net_max_sends(0)(); });
  add("alloc_device", "value", "alloc_device", "net_max_cqes",
      [] { lci::alloc_device_x().net_max_cqes(0)(); });
  add("free_device", "null", "free_device", "null",
      [] { lci::free_device(nullptr); });
  add("free_device", "foreign", "free_device", F, [=] {
    lci::device_t d = foreign_dev;
    lci::free_device(&d);
  });
  {
    lci::device_t d = lci::alloc_device_x().net_max_recvs(4)();
    lci::device_t copy = d;
    lci::free_device(&d);
    add("free_device", "double_free", "free_device", ptr(copy.get_impl()), [=] {
      lci::device_t c = copy;
      lci::free_device(&c);
    });
  }
  add("get_default_device", "foreign", "get_default_device", F,
      [=] { lci::get_default_device_x().runtime(foreign_rt)(); });
  // packet pools and user packets
  add("alloc_packet_pool", "value", "alloc_packet_pool", "packet_size",
      [] { lci::alloc_packet_pool_x().packet_size(8)(); });
  add("alloc_packet_pool", "value", "alloc_packet_pool", "npackets",
      [] { lci::alloc_packet_pool_x().npackets(0)(); });
  add("alloc_packet_pool", "oversize", "alloc_packet_pool", "",
      [] { lci::alloc_packet_pool_x().npackets(size_t(1) << 62)(); });
  add("alloc_packet_pool", "foreign", "alloc_packet_pool", F,
      [=] { lci::alloc_packet_pool_x().runtime(foreign_rt)(); });
  add("free_packet_pool", "null", "free_packet_pool", "null",
      [] { lci::free_packet_pool(nullptr); });
  add("free_packet_pool", "foreign", "free_packet_pool", F, [=] {
    lci::packet_pool_t p = foreign_pool;
    lci::free_packet_pool(&p);
  });
  {
    lci::packet_pool_t p = lci::alloc_packet_pool_x().npackets(8)();
    lci::packet_pool_t copy = p;
    lci::free_packet_pool(&p);
    add("free_packet_pool", "double_free", "free_packet_pool",
        ptr(copy.get_impl()), [=] {
          lci::packet_pool_t c = copy;
          lci::free_packet_pool(&c);
        });
    add("get_upacket", "freed", "get_upacket", ptr(copy.get_impl()),
        [=] { lci::get_upacket_x().packet_pool(copy)(); });
    add("get_max_bcopy_size", "freed", "get_max_bcopy_size",
        ptr(copy.get_impl()),
        [=] { lci::get_max_bcopy_size_x().packet_pool(copy)(); });
  }
  add("register_packet_pool", "foreign", "register_packet_pool", F, [=] {
    lci::register_packet_pool(foreign_pool, lci::get_default_device());
  });
  add("register_packet_pool", "foreign", "register_packet_pool", F, [=] {
    lci::register_packet_pool(lci::get_default_packet_pool(), foreign_dev);
  });
  add("register_packet_pool", "null", "register_packet_pool", "empty handle",
      [] {
        lci::register_packet_pool(lci::packet_pool_t(),
                                  lci::get_default_device());
      });
  add("deregister_packet_pool", "foreign", "deregister_packet_pool", F, [=] {
    lci::deregister_packet_pool(foreign_pool, lci::get_default_device());
  });
  add("deregister_packet_pool", "value", "deregister_packet_pool",
      "not registered", [] {
        lci::packet_pool_t p = lci::alloc_packet_pool_x().npackets(8)();
        struct guard_t {
          lci::packet_pool_t* p;
          ~guard_t() { lci::free_packet_pool(p); }
        } guard{&p};
        lci::deregister_packet_pool(p, lci::get_default_device());
      });
  add("get_default_packet_pool", "foreign", "get_default_packet_pool", F,
      [=] { lci::get_default_packet_pool_x().runtime(foreign_rt)(); });
  // network contexts and endpoints (handles on the runtime's context and a
  // device's endpoint), reserved remote completions, global defaults
  add("alloc_net_context", "foreign", "alloc_net_context", F,
      [=] { lci::alloc_net_context_x().runtime(foreign_rt)(); });
  add("get_default_net_context", "foreign", "get_default_net_context", F,
      [=] { lci::get_default_net_context_x().runtime(foreign_rt)(); });
  add("free_net_context", "null", "free_net_context", "null",
      [] { lci::free_net_context(nullptr); });
  add("free_net_context", "foreign", "free_net_context", F, [=] {
    lci::net_context_t c(reinterpret_cast<lci::net_context_impl_t*>(fake()));
    lci::free_net_context(&c);
  });
  {
    lci::net_context_t c = lci::alloc_net_context();
    lci::net_context_t copy = c;
    lci::free_net_context(&c);
    add("free_net_context", "double_free", "free_net_context",
        ptr(copy.get_impl()), [=] {
          lci::net_context_t x = copy;
          lci::free_net_context(&x);
        });
    add("alloc_device", "freed", "alloc_device", ptr(copy.get_impl()),
        [=] { lci::alloc_device_x().net_context(copy)(); });
  }
  add("alloc_endpoint", "foreign", "alloc_endpoint", F,
      [=] { lci::alloc_endpoint_x().device(foreign_dev)(); });
  add("get_default_endpoint", "foreign", "get_default_endpoint", F,
      [=] { lci::get_default_endpoint_x().device(foreign_dev)(); });
  add("free_endpoint", "null", "free_endpoint", "null",
      [] { lci::free_endpoint(nullptr); });
  add("free_endpoint", "foreign", "free_endpoint", F, [=] {
    lci::endpoint_t e(reinterpret_cast<lci::endpoint_impl_t*>(fake()));
    lci::free_endpoint(&e);
  });
  {
    lci::endpoint_t e = lci::alloc_endpoint();
    lci::endpoint_t copy = e;
    lci::free_endpoint(&e);
    add("free_endpoint", "double_free", "free_endpoint", ptr(copy.get_impl()),
        [=] {
          lci::endpoint_t x = copy;
          lci::free_endpoint(&x);
        });
    add("post_comm", "freed", "post_comm", ptr(copy.get_impl()), [=] {
      char b[8];
      lci::post_send_x(0, b, 8, 1, lci::COMP_NULL).endpoint(copy)();
    });
  }
  add("reserve_rcomps", "value", "reserve_rcomps", "bad count",
      [] { lci::reserve_rcomps(0); });
  add("reserve_rcomps", "oversize", "reserve_rcomps", "largest",
      [] { lci::reserve_rcomps((1u << 24) + 1); });
  add("reserve_rcomps", "foreign", "reserve_rcomps", F,
      [=] { lci::reserve_rcomps_x(1).runtime(foreign_rt)(); });
  add("global_finalize", "value", "global_finalize", "no global_initialize",
      [] { lci::global_finalize(); });
  add("set_allocator", "foreign", "set_allocator", F,
      [=] { lci::set_allocator_x(nullptr).runtime(foreign_rt)(); });
  add("get_allocator", "foreign", "get_allocator", F,
      [=] { lci::get_allocator_x().runtime(foreign_rt)(); });
  add("get_upacket", "foreign", "get_upacket", F,
      [=] { lci::get_upacket_x().packet_pool(foreign_pool)(); });
  add("get_max_bcopy_size", "foreign", "get_max_bcopy_size", F,
      [=] { lci::get_max_bcopy_size_x().packet_pool(foreign_pool)(); });
  add("put_upacket", "null", "put_upacket", "null",
      [] { lci::put_upacket(nullptr); });
  add("put_upacket", "foreign", "put_upacket", F,
      [=] { lci::put_upacket(fake()); });
  {
    void* up = lci::get_upacket();
    ASSERT_NE(up, nullptr);
    lci::put_upacket(up);
    add("put_upacket", "double_free", "put_upacket", ptr(up),
        [=] { lci::put_upacket(up); });
    add("post_send", "freed", PC, ptr(up),
        [=] { lci::post_send(0, up, 8, 1, lci::COMP_NULL); });
  }
  // matching engines
  add("alloc_matching_engine", "value", "alloc_matching_engine", "num_buckets",
      [] { lci::alloc_matching_engine_x().num_buckets(0)(); });
  add("alloc_matching_engine", "oversize", "alloc_matching_engine",
      "num_buckets",
      [] { lci::alloc_matching_engine_x().num_buckets(size_t(1) << 60)(); });
  add("alloc_matching_engine", "foreign", "alloc_matching_engine", F,
      [=] { lci::alloc_matching_engine_x().runtime(foreign_rt)(); });
  add("free_matching_engine", "null", "free_matching_engine", "null",
      [] { lci::free_matching_engine(nullptr); });
  add("free_matching_engine", "foreign", "free_matching_engine", F, [=] {
    lci::matching_engine_t m = foreign_me;
    lci::free_matching_engine(&m);
  });
  add("get_default_matching_engine", "foreign", "get_default_matching_engine",
      F, [=] { lci::get_default_matching_engine_x().runtime(foreign_rt)(); });
  {
    lci::matching_engine_t m = lci::alloc_matching_engine_x().num_buckets(4)();
    lci::matching_engine_t copy = m;
    lci::free_matching_engine(&m);
    add("free_matching_engine", "double_free", "free_matching_engine",
        ptr(copy.get_impl()), [=] {
          lci::matching_engine_t c = copy;
          lci::free_matching_engine(&c);
        });
    add("matching_engine_insert", "freed", "matching_engine_insert",
        ptr(copy.get_impl()), [=] {
          lci::matching_engine_insert(copy, 1, fake(),
                                      lci::matching_entry_type_t::send);
        });
  }
  add("matching_engine_insert", "foreign", "matching_engine_insert", F, [=] {
    lci::matching_engine_insert(foreign_me, 1, fake(),
                                lci::matching_entry_type_t::send);
  });
  add("matching_engine_insert", "null", "matching_engine_insert", "null", [] {
    lci::matching_engine_insert(lci::get_default_matching_engine(), 1, nullptr,
                                lci::matching_entry_type_t::recv);
  });
  add("matching_engine_insert", "value", "matching_engine_insert", "entry_type",
      [] {
        lci::matching_engine_insert(lci::get_default_matching_engine(), 1,
                                    fake(),
                                    static_cast<lci::matching_entry_type_t>(5));
      });
  // memory registration
  char buf[64];
  add("register_memory", "null", "register_memory", "null",
      [] { lci::register_memory(nullptr, 8); });
  add("register_memory", "oversize", "register_memory",
      std::to_string(size_t(1) << 63),
      [&] { lci::register_memory(buf, size_t(1) << 63); });
  add("register_memory", "foreign", "register_memory", F,
      [&] { lci::register_memory_x(buf, 8).runtime(foreign_rt)(); });
  add("deregister_memory", "null", "deregister_memory", "null",
      [] { lci::deregister_memory(nullptr); });
  add("deregister_memory", "foreign", "deregister_memory", F, [=] {
    lci::mr_t m = foreign_mr;
    lci::deregister_memory(&m);
  });
  {
    lci::mr_t m = lci::register_memory(buf, 8);
    lci::mr_t copy = m;
    lci::deregister_memory(&m);
    add("deregister_memory", "double_free", "deregister_memory",
        ptr(copy.get_impl()), [=] {
          lci::mr_t c = copy;
          lci::deregister_memory(&c);
        });
    add("get_rmr", "freed", "get_rmr", ptr(copy.get_impl()),
        [=] { lci::get_rmr(copy); });
  }
  add("get_rmr", "foreign", "get_rmr", F, [=] { lci::get_rmr(foreign_mr); });
  add("get_rmr", "null", "get_rmr", "empty handle",
      [=] { lci::get_rmr(lci::mr_t()); });
  // handle attribute getters
  {
    lci::device_t d = lci::alloc_device_x().net_max_recvs(4)();
    lci::device_t copy = d;
    lci::free_device(&d);
    add("device_t::get_attr", "freed", "get_attr_net_max_recvs",
        ptr(copy.get_impl()), [=] { copy.get_attr_net_max_recvs(); });
  }
  add("runtime_t::get_attr", "foreign", "get_attr_packet_size", F,
      [=] { foreign_rt.get_attr_packet_size(); });
  add("runtime_t::get_attr", "null", "get_attr_packet_size", "empty handle",
      [=] { lci::runtime_t().get_attr_packet_size(); });
  run_rows(rows);
}

TEST_F(LciTest, CompletionObjects)
{
  std::vector<row_t> rows;
  auto add = [&](std::string op, std::string klass, std::string names,
                 std::string value, std::function<void()> f) {
    rows.push_back({op, klass, names, value, f});
  };
  lci::comp_t foreign(reinterpret_cast<lci::comp_impl_t*>(fake()));
  const std::string F = ptr(fake());
  lci::comp_t cq = lci::alloc_cq();
  lci::comp_t sync = lci::alloc_sync();
  lci::comp_t counter = lci::alloc_counter();
  lci::comp_t graph = lci::alloc_graph();
  lci::comp_t dead[5] = {lci::alloc_cq(), lci::alloc_sync(),
                         lci::alloc_counter(), lci::alloc_graph(),
                         lci::alloc_handler([](lci::status_t) {})};
  lci::comp_t copies[5];
  for (int i = 0; i < 5; ++i) {
    copies[i] = dead[i];
    lci::free_comp(&dead[i]);
  }
  const lci::comp_t dcq = copies[0], dsync = copies[1], dcounter = copies[2],
                    dgraph = copies[3], dhandler = copies[4];
  add("alloc_sync", "value", "alloc_sync", "threshold",
      [] { lci::alloc_sync_x().threshold(0)(); });
  add("alloc_cq", "value", "alloc_cq", "cq_type",
      [] { lci::alloc_cq_x().cq_type("ring")(); });
  add("alloc_cq", "value", "alloc_cq", "default_length",
      [] { lci::alloc_cq_x().cq_type("array").default_length(0)(); });
  add("alloc_cq", "oversize", "alloc_cq", "default_length", [] {
    lci::alloc_cq_x().cq_type("array").default_length(size_t(1) << 62)();
  });
  add("alloc_handler", "null", "alloc_handler", "null",
      [] { lci::alloc_handler(nullptr); });
  add("alloc_counter", "foreign", "alloc_counter", F, [] {
    lci::alloc_counter_x().runtime(
        lci::runtime_t(reinterpret_cast<lci::runtime_impl_t*>(fake())))();
  });
  for (auto& [op, c] : std::vector<std::pair<std::string, lci::comp_t>>{
           {"sync_test", dsync},
           {"sync_wait", dsync},
           {"cq_pop", dcq},
           {"counter_get", dcounter},
           {"counter_set", dcounter},
           {"graph_start", dgraph},
           {"graph_test", dgraph},
           {"graph_add_node", dgraph},
           {"graph_add_edge", dgraph}}) {
    auto call = [op = op](lci::comp_t x) {
      if (op == "sync_test") lci::sync_test(x, nullptr);
      if (op == "sync_wait") lci::sync_wait(x, nullptr);
      if (op == "cq_pop") lci::cq_pop(x);
      if (op == "counter_get") lci::counter_get(x);
      if (op == "counter_set") lci::counter_set(x, 1);
      if (op == "graph_start") lci::graph_start(x);
      if (op == "graph_test") lci::graph_test(x);
      if (op == "graph_add_node") lci::graph_add_node(x, node_fn);
      if (op == "graph_add_edge")
        lci::graph_add_edge(x, lci::GRAPH_START, lci::GRAPH_END);
    };
    add(op, "freed", op, ptr(c.get_impl()), [=] { call(c); });
    add(op, "foreign", op, F, [=] { call(foreign); });
    add(op, "null", op, "empty", [=] { call(lci::comp_t()); });
  }
  // of the wrong kind (a live object of another type)
  add("sync_test", "value", "sync_test", "synchronizer",
      [=] { lci::sync_test(cq, nullptr); });
  add("cq_pop", "value", "cq_pop", "completion queue",
      [=] { lci::cq_pop(sync); });
  add("counter_get", "value", "counter_get", "counter",
      [=] { lci::counter_get(graph); });
  add("graph_start", "value", "graph_start", "graph",
      [=] { lci::graph_start(counter); });
  add("comp_signal", "null", "comp_signal", "empty",
      [] { lci::comp_signal(lci::comp_t(), lci::status_t()); });
  add("free_comp", "null", "free_comp", "null",
      [] { lci::free_comp(nullptr); });
  add("free_comp", "foreign", "free_comp", F, [=] {
    lci::comp_t c = foreign;
    lci::free_comp(&c);
  });
  for (lci::comp_t c : {dcq, dsync, dcounter, dgraph, dhandler})
    add("free_comp", "double_free", "free_comp", ptr(c.get_impl()), [=] {
      lci::comp_t x = c;
      lci::free_comp(&x);
    });
  add("alloc_graph", "value", "alloc_graph", "COMP_NULL_RETRY",
      [] { lci::alloc_graph_x().comp(lci::COMP_NULL_RETRY)(); });
  // now, before any other completion object is allocated (the memory of a
  // freed object may be reused by the next allocation of the same size,
  // and a reused address is a live object again: see RELIABILITY.md)
  run_rows(rows);
  rows.clear();
  // graph nodes: of a freed graph, of another graph, not a node
  lci::comp_t g2 = lci::alloc_graph();
  lci::graph_node_t n2 = lci::graph_add_node(g2, node_fn);
  lci::graph_node_t n1 = lci::graph_add_node(graph, node_fn);
  lci::graph_node_t dead_node;
  {
    lci::comp_t g3 = lci::alloc_graph();
    dead_node = lci::graph_add_node(g3, node_fn);
    lci::free_comp(&g3);
  }
  add("graph_add_edge", "foreign", "graph_add_edge", "another graph",
      [=] { lci::graph_add_edge(graph, n1, n2); });
  add("graph_add_edge", "freed", "graph_add_edge", ptr(dead_node),
      [=] { lci::graph_add_edge(graph, n1, dead_node); });
  add("graph_add_edge", "foreign", "graph_add_edge", F,
      [=] { lci::graph_add_edge(graph, fake(), n1); });
  add("graph_add_edge", "value", "graph_add_edge", "itself",
      [=] { lci::graph_add_edge(graph, n1, n1); });
  add("graph_node_mark_complete", "freed", "graph_node_mark_complete",
      ptr(dead_node), [=] { lci::graph_node_mark_complete(dead_node); });
  add("graph_node_mark_complete", "foreign", "graph_node_mark_complete", F,
      [=] { lci::graph_node_mark_complete(fake()); });
  add("graph_node_mark_complete", "null", "graph_node_mark_complete", "null",
      [=] { lci::graph_node_mark_complete(nullptr); });
  add("graph_node_mark_complete", "value", "graph_node_mark_complete",
      "GRAPH_START", [=] { lci::graph_node_mark_complete(lci::GRAPH_START); });
  // remote completions
  add("register_rcomp", "null", "register_rcomp", "empty",
      [] { lci::register_rcomp(lci::comp_t()); });
  add("register_rcomp", "foreign", "register_rcomp", F, [=] {
    lci::register_rcomp_x(cq).runtime(
        lci::runtime_t(reinterpret_cast<lci::runtime_impl_t*>(fake())))();
  });
  add("deregister_rcomp", "rcomp", "deregister_rcomp", "12345",
      [] { lci::deregister_rcomp(12345); });
  {
    lci::rcomp_t r = lci::register_rcomp(cq);
    lci::deregister_rcomp(r);
    add("deregister_rcomp", "double_free", "deregister_rcomp",
        std::to_string(r), [=] { lci::deregister_rcomp(r); });
  }
  add("deregister_rcomp", "rcomp", "deregister_rcomp", "",
      [] { lci::deregister_rcomp(lci::RCOMP_NULL); });
  run_rows(rows);
  lci::free_comp(&g2);
  for (lci::comp_t* c : {&cq, &sync, &counter, &graph}) lci::free_comp(c);
}

TEST_F(LciTest, Collectives)
{
  std::vector<row_t> rows;
  auto add = [&](std::string op, std::string klass, std::string names,
                 std::string value, std::function<void()> f) {
    rows.push_back({op, klass, names, value, f});
  };
  char s[64] = {}, r[64] = {};
  const size_t huge = size_t(1) << 62;
  lci::device_t foreign_dev(reinterpret_cast<lci::device_impl_t*>(fake()));
  lci::matching_engine_t foreign_me(
      reinterpret_cast<lci::matching_engine_impl_t*>(fake()));
  const std::string F = ptr(fake());
  lci::device_t dead = lci::alloc_device_x().net_max_recvs(4)();
  lci::device_t dead_copy = dead;
  lci::free_device(&dead);
  add("barrier", "foreign", "barrier", F,
      [=] { lci::barrier_x().device(foreign_dev)(); });
  add("barrier", "foreign", "barrier", F,
      [=] { lci::barrier_x().matching_engine(foreign_me)(); });
  add("barrier", "freed", "barrier", ptr(dead_copy.get_impl()),
      [=] { lci::barrier_x().device(dead_copy)(); });
  add("barrier", "value", "barrier", "COMP_NULL_RETRY",
      [=] { lci::barrier_x().comp(lci::COMP_NULL_RETRY)(); });
  add("broadcast", "rank", "broadcast", "root 1",
      [&] { lci::broadcast(s, 8, 1); });
  add("broadcast", "rank", "broadcast", "root -1",
      [&] { lci::broadcast(s, 8, -1); });
  add("broadcast", "null", "broadcast", "null",
      [&] { lci::broadcast(nullptr, 8, 0); });
  add("broadcast", "oversize", "broadcast", std::to_string(huge * 2),
      [&] { lci::broadcast(s, huge * 2, 0); });
  add("broadcast", "value", "broadcast", "algorithm", [&] {
    lci::broadcast_x(s, 8, 0).algorithm(
        static_cast<lci::broadcast_algorithm_t>(9))();
  });
  add("broadcast", "freed", "broadcast", ptr(dead_copy.get_impl()),
      [&] { lci::broadcast_x(s, 8, 0).device(dead_copy)(); });
  add("reduce", "rank", "reduce", "root 3",
      [&] { lci::reduce(s, r, 8, 1, sum_op, 3); });
  add("reduce", "null", "reduce", "null",
      [&] { lci::reduce(nullptr, r, 8, 1, sum_op, 0); });
  add("reduce", "null", "reduce", "null",
      [&] { lci::reduce(s, r, 8, 1, nullptr, 0); });
  add("reduce", "oversize", "reduce", "larger than any buffer",
      [&] { lci::reduce(s, r, huge, 8, sum_op, 0); });
  add("reduce", "value", "reduce", "item_size",
      [&] { lci::reduce(s, r, 8, 0, sum_op, 0); });
  add("allreduce", "null", "allreduce", "null",
      [&] { lci::allreduce(s, nullptr, 8, 1, sum_op); });
  add("allreduce", "null", "allreduce", "null",
      [&] { lci::allreduce(s, r, 8, 1, nullptr); });
  add("allreduce", "oversize", "allreduce", "larger than any buffer",
      [&] { lci::allreduce(s, r, huge, 16, sum_op); });
  add("allreduce", "value", "allreduce", "algorithm", [&] {
    lci::allreduce_x(s, r, 8, 1, sum_op)
        .algorithm(static_cast<lci::allreduce_algorithm_t>(9))();
  });
  add("allreduce", "foreign", "allreduce", F, [&] {
    lci::allreduce_x(s, r, 8, 1, sum_op).matching_engine(foreign_me)();
  });
  add("reduce_scatter", "null", "reduce_scatter", "null",
      [&] { lci::reduce_scatter(nullptr, r, 8, 1, sum_op); });
  add("reduce_scatter", "null", "reduce_scatter", "null",
      [&] { lci::reduce_scatter(s, r, 8, 1, nullptr); });
  add("reduce_scatter", "oversize", "reduce_scatter", "larger than any buffer",
      [&] { lci::reduce_scatter(s, r, huge, 16, sum_op); });
  add("reduce_scatter", "value", "reduce_scatter", "algorithm", [&] {
    lci::reduce_scatter_x(s, r, 8, 1, sum_op)
        .algorithm(static_cast<lci::reduce_scatter_algorithm_t>(9))();
  });
  add("allgather", "null", "allgather", "null",
      [&] { lci::allgather(s, nullptr, 8); });
  add("allgather", "null", "allgather", "null",
      [&] { lci::allgather(nullptr, r, 8); });
  add("allgather", "oversize", "allgather", std::to_string(huge * 2),
      [&] { lci::allgather(s, r, huge * 2); });
  add("allgather", "value", "allgather", "algorithm", [&] {
    lci::allgather_x(s, r, 8).algorithm(
        static_cast<lci::allgather_algorithm_t>(9))();
  });
  add("allgather", "foreign", "allgather", F,
      [&] { lci::allgather_x(s, r, 8).device(foreign_dev)(); });
  add("alltoall", "null", "alltoall", "null",
      [&] { lci::alltoall(nullptr, r, 8); });
  add("alltoall", "null", "alltoall", "null",
      [&] { lci::alltoall(s, nullptr, 8); });
  add("alltoall", "oversize", "alltoall", std::to_string(huge * 2),
      [&] { lci::alltoall(s, r, huge * 2); });
  add("alltoall", "freed", "alltoall", ptr(dead_copy.get_impl()),
      [&] { lci::alltoall_x(s, r, 8).device(dead_copy)(); });
  run_rows(rows);
  // the collectives still work
  lci::barrier();
  s[0] = 5;
  lci::allreduce(s, r, 1, 1, sum_op);
  EXPECT_EQ(r[0], 5);
}

// After g_runtime_fina: every call that needs the global runtime says there
// is none; handles of the finalized runtime (kept by the user) are refused.
TEST_F(LciTest, UseAfterFinalize)
{
  lci::runtime_t old_rt = lci::get_g_runtime();
  lci::device_t old_dev = lci::get_default_device();
  lci::matching_engine_t old_me = lci::get_default_matching_engine();
  lci::packet_pool_t old_pool = lci::get_default_packet_pool();
  lci::device_t user_dev = lci::alloc_device_x().net_max_recvs(4)();
  lci::matching_engine_t user_me =
      lci::alloc_matching_engine_x().num_buckets(4)();
  char buf[64] = {};
  lci::mr_t mr = lci::register_memory(buf, sizeof(buf));
  lci::comp_t cq = lci::alloc_cq();
  lci::g_runtime_fina();
  EXPECT_TRUE(lci::get_g_runtime().is_empty());
  const std::string RT = ptr(old_rt.get_impl());
  std::vector<row_t> rows;
  auto add = [&](std::string op, std::string names, std::string value,
                 std::function<void()> f) {
    rows.push_back({op, "finalized", names, value, f});
  };
  add("g_runtime_fina", "g_runtime_fina", "not initialized",
      [] { lci::g_runtime_fina(); });
  // (a bad attribute: classed "finalized" here as the row needs no global
  // runtime; it also counts for the class "value" below)
  add("g_runtime_init", "alloc_runtime", "max_tag",
      [] { lci::g_runtime_init_x().max_tag(lci::ANY_TAG)(); });
  rows.back().klass = "value";
  add("post_send", PC, "no runtime",
      [&] { lci::post_send(0, buf, 8, 1, lci::COMP_NULL); });
  add("post_recv", PC, "no runtime", [&] { lci::post_recv(0, buf, 8, 1, cq); });
  add("post_comm", PC, "not allocated", [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, lci::COMP_NULL)
        .runtime(old_rt)();
  });
  add("post_comm", PC, "not allocated", [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, lci::COMP_NULL)
        .device(old_dev)();
  });
  add("post_comm", PC, "not allocated", [&] {
    lci::post_comm_x(lci::direction_t::OUT, 0, buf, 8, lci::COMP_NULL)
        .device(user_dev)();
  });
  add("post_am", PC, "no runtime",
      [&] { lci::post_am(0, buf, 8, lci::COMP_NULL, 0); });
  add("post_put", PC, "no runtime",
      [&] { lci::post_put(0, buf, 8, lci::COMP_NULL, 0, lci::rmr_t()); });
  add("post_get", PC, "not allocated", [&] {
    lci::post_get_x(0, buf, 8, lci::COMP_NULL, 0, lci::rmr_t())
        .runtime(old_rt)();
  });
  add("progress", "progress", "no runtime", [] { lci::progress(); });
  add("progress", "progress", RT, [&] { lci::progress_x().runtime(old_rt)(); });
  add("progress", "progress", "not allocated",
      [&] { lci::progress_x().device(old_dev)(); });
  add("test_drained", "test_drained", "no runtime",
      [] { lci::test_drained(); });
  add("wait_drained", "wait_drained", "not allocated",
      [&] { lci::wait_drained_x().device(user_dev)(); });
  add("get_rank_me", "get_rank_me", "no runtime", [] { lci::get_rank_me(); });
  add("get_rank_n", "get_rank_n", RT,
      [&] { lci::get_rank_n_x().runtime(old_rt)(); });
  add("is_peer_failed", "is_peer_failed", RT,
      [&] { lci::is_peer_failed_x(0).runtime(old_rt)(); });
  add("alloc_device", "alloc_device", "no runtime",
      [] { lci::alloc_device(); });
  add("alloc_device", "alloc_device", "not allocated",
      [&] { lci::alloc_device_x().runtime(old_rt).packet_pool(old_pool)(); });
  add("free_device", "free_device", "not allocated", [&] {
    lci::device_t d = user_dev;
    lci::free_device(&d);
  });
  add("free_runtime", "free_runtime", "not allocated", [&] {
    lci::runtime_t r = old_rt;
    lci::free_runtime(&r);
  });
  add("get_default_device", "get_default_device", "no runtime",
      [] { lci::get_default_device(); });
  add("alloc_packet_pool", "alloc_packet_pool", "no runtime",
      [] { lci::alloc_packet_pool(); });
  add("free_packet_pool", "free_packet_pool", "not allocated", [&] {
    lci::packet_pool_t p = old_pool;
    lci::free_packet_pool(&p);
  });
  add("get_default_packet_pool", "get_default_packet_pool", "no runtime",
      [] { lci::get_default_packet_pool(); });
  add("set_allocator", "set_allocator", "no runtime",
      [] { lci::set_allocator(nullptr); });
  add("get_allocator", "get_allocator", RT,
      [&] { lci::get_allocator_x().runtime(old_rt)(); });
  add("get_upacket", "get_upacket", "no runtime", [] { lci::get_upacket(); });
  add("get_upacket", "get_upacket", "not allocated",
      [&] { lci::get_upacket_x().packet_pool(old_pool)(); });
  add("get_max_bcopy_size", "get_max_bcopy_size", "no runtime",
      [] { lci::get_max_bcopy_size(); });
  add("alloc_matching_engine", "alloc_matching_engine", "no runtime",
      [] { lci::alloc_matching_engine(); });
  add("free_matching_engine", "free_matching_engine", "not allocated", [&] {
    lci::matching_engine_t m = user_me;
    lci::free_matching_engine(&m);
  });
  add("get_default_matching_engine", "get_default_matching_engine",
      "no runtime", [] { lci::get_default_matching_engine(); });
  add("matching_engine_insert", "matching_engine_insert", "not allocated", [&] {
    lci::matching_engine_insert(old_me, 1, buf,
                                lci::matching_entry_type_t::send);
  });
  add("register_rcomp", "register_rcomp", "no runtime",
      [&] { lci::register_rcomp(cq); });
  add("deregister_rcomp", "deregister_rcomp", "no runtime",
      [] { lci::deregister_rcomp(0); });
  add("register_memory", "register_memory", "no runtime",
      [&] { lci::register_memory(buf, 8); });
  // registrations go with their runtime
  add("deregister_memory", "deregister_memory", "not allocated", [&] {
    lci::mr_t m = mr;
    lci::deregister_memory(&m);
  });
  add("get_rmr", "get_rmr", "not allocated", [&] { lci::get_rmr(mr); });
  add("sync_wait", "sync_wait", "no runtime", [] {
    lci::comp_t s = lci::alloc_sync();
    lci::comp_signal(s, lci::status_t(lci::errorcode_t::done));
    try {
      lci::sync_wait(s, nullptr);
    } catch (...) {
      lci::free_comp(&s);
      throw;
    }
    lci::free_comp(&s);
  });
  add("barrier", "barrier", "no runtime", [] { lci::barrier(); });
  add("broadcast", "broadcast", "no runtime",
      [&] { lci::broadcast(buf, 8, 0); });
  add("reduce", "reduce", "no runtime",
      [&] { lci::reduce(buf, buf, 8, 1, sum_op, 0); });
  add("allreduce", "allreduce", "no runtime",
      [&] { lci::allreduce(buf, buf, 8, 1, sum_op); });
  add("reduce_scatter", "reduce_scatter", "no runtime",
      [&] { lci::reduce_scatter(buf, buf, 8, 1, sum_op); });
  add("allgather", "allgather", "no runtime",
      [&] { lci::allgather(buf, buf + 8, 8); });
  add("alltoall", "alltoall", "not allocated",
      [&] { lci::alltoall_x(buf, buf + 8, 8).runtime(old_rt)(); });
  add("runtime_t::get_attr", "get_attr_packet_size", RT,
      [&] { old_rt.get_attr_packet_size(); });
  run_rows(rows, /*check_works=*/false);
  // completion objects do not belong to a runtime: still usable
  lci::comp_signal(cq, lci::status_t(lci::errorcode_t::done));
  EXPECT_TRUE(lci::cq_pop(cq).is_done());
  lci::free_comp(&cq);
  lci::g_runtime_init();
  expect_sendrecv_works();
}

// Every operation of spec.py has rows (or a reason to have none); printed:
// the count the lead reports in docs/RELIABILITY.md.
TEST(BadInputMatrix, CoversEveryOperation)
{
  std::ifstream in(LCI_SPEC_PY);
  ASSERT_TRUE(in) << "cannot read " << LCI_SPEC_PY;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string spec = ss.str();
  std::regex op_re("\\bop\\(\"([a-z_0-9]+)\"");
  std::set<std::string> ops;
  for (auto it = std::sregex_iterator(spec.begin(), spec.end(), op_re);
       it != std::sregex_iterator(); ++it)
    ops.insert((*it)[1]);
  ASSERT_GT(ops.size(), 50u);
  const tally_t& t = tally();
  for (const std::string& op : ops)
    EXPECT_TRUE(t.ops.count(op) || kNoBadInput.count(op))
        << "operation " << op << " of spec.py has no bad-input row";
  std::printf(
      "bad input matrix: %zu rows tried, %zu operations of %zu in spec.py "
      "(+ handle getters: %zu), %zu classes, %zu (operation, class) cells\n",
      t.rows, ops.size() - kNoBadInput.size(), ops.size(),
      t.ops.size() - (ops.size() - kNoBadInput.size()), t.classes.size(),
      t.cells.size());
  for (const std::string& k : t.classes) {
    size_t n = 0;
    for (const auto& c : t.cells) n += c.second == k;
    std::printf("  class %-12s %zu operations\n", k.c_str(), n);
  }
}

}  // namespace
