// Lists of buffers in one post (.buffers / .rbuffers, the paper's Section
// 3.3.1) around a ring of ranks (each rank sends to the next): sends and
// active messages of a list, eager and rendezvous, received into a list
// (scattered) or one buffer; puts and gets of a list to one remote buffer
// each and to consecutive bytes of one region, with and without signal;
// blocking lists; a list in a graph node. Each list completes exactly once,
// with buffer = the first buffer and size = the total bytes, and every byte is
// checked. Then the bad lists: each a fatal_error naming what is wrong.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mp_check.hpp"

namespace
{

int g_me, g_n, g_next, g_prev;

unsigned char byte_of(int rank, size_t i, int salt)
{
  return static_cast<unsigned char>(rank * 31 + i * 7 + salt);
}

// `n` pieces of the given sizes, one allocation each, filled as rank
// `rank`'s bytes (0 when `fill` is false).
struct pieces_t {
  std::vector<std::vector<unsigned char>> mem;
  lci::buffers_t list;
  size_t total = 0;
  pieces_t(const std::vector<size_t>& sizes, int rank, int salt, bool fill)
  {
    size_t at = 0;
    for (size_t s : sizes) {
      mem.emplace_back(s);
      for (size_t i = 0; i < s; ++i)
        mem.back()[i] = fill ? byte_of(rank, at + i, salt) : 0;
      at += s;
    }
    for (auto& m : mem) list.emplace_back(m.data(), m.size());
    total = at;
  }
  // the bytes at list offset [0, n) are rank's
  bool holds(int rank, int salt, size_t n) const
  {
    size_t at = 0;
    for (auto& m : mem)
      for (size_t i = 0; i < m.size(); ++i, ++at)
        if (at < n && m[i] != byte_of(rank, at, salt)) return false;
    return true;
  }
};

lci::status_t wait(lci::comp_t sync, lci::status_t s)
{
  if (s.is_posted()) lci::sync_wait(sync, &s);
  return s;
}

lci::status_t pop(lci::comp_t cq)
{
  lci::status_t s;
  do {
    lci::progress();
    s = lci::cq_pop(cq);
  } while (s.is_retry());
  return s;
}

// Posts `op` (an OFF object) until it is not refused, then waits for it
// on `cq` if it was posted.
template <typename Op>
lci::status_t post_and_pop(Op op, lci::comp_t cq)
{
  lci::status_t s;
  while ((s = op()).is_retry()) lci::progress();
  return s.is_posted() ? pop(cq) : s;
}

// Nothing more arrives at `cq` (after a barrier: every list completed).
void check_empty(lci::comp_t cq, const char* what)
{
  for (int i = 0; i < 100; ++i) lci::progress();
  lci::status_t s = lci::cq_pop(cq);
  CHECK(s.is_retry(), "%s: a second completion of one list", what);
}

// A list sent to the next rank, received from the previous one into
// `recv_sizes` (a list) or, when empty, into one buffer.
void send_recv(const std::vector<size_t>& send_sizes,
               const std::vector<size_t>& recv_sizes, int salt)
{
  pieces_t out(send_sizes, g_me, salt, true);
  std::vector<size_t> rs = recv_sizes;
  if (rs.empty()) rs.push_back(out.total);
  pieces_t in(rs, -1, 0, false);
  lci::comp_t rsync = lci::alloc_sync(), ssync = lci::alloc_sync();
  lci::status_t r;
  if (recv_sizes.empty())
    r = lci::post_recv(g_prev, in.list[0].base, in.total, salt, rsync);
  else
    r = lci::post_recv_x(g_prev, nullptr, 0, salt, rsync).buffers(in.list)();
  lci::status_t s;
  do {
    s = lci::post_send_x(g_next, nullptr, 0, salt, ssync)
            .buffers(out.list)
            .user_context(&out)();
    lci::progress();
  } while (s.is_retry());
  s = wait(ssync, s);
  r = wait(rsync, r);
  CHECK(s.is_done() && s.buffer == out.list[0].base && s.size == out.total &&
            s.user_context == &out && s.rank == g_next,
        "send list %d: status buffer %p size %zu", salt, s.buffer, s.size);
  CHECK(r.is_done() && r.size == out.total && r.rank == g_prev &&
            r.tag == static_cast<lci::tag_t>(salt) &&
            r.buffer == in.list[0].base,
        "recv of list %d: size %zu rank %d", salt, r.size, r.rank);
  CHECK(in.holds(g_prev, salt, out.total), "recv of list %d: bytes", salt);
  lci::free_comp(&rsync);
  lci::free_comp(&ssync);
}

void am_list(lci::rcomp_t rcomp, lci::comp_t rcq,
             const std::vector<size_t>& sizes, int salt)
{
  pieces_t out(sizes, g_me, salt, true);
  lci::comp_t lcq = lci::alloc_cq();
  lci::status_t s;
  do {
    s = lci::post_am_x(g_next, nullptr, 0, lcq, rcomp)
            .buffers(out.list)
            .tag(salt)
            .allow_done(false)();
    lci::progress();
  } while (s.is_retry());
  CHECK(s.is_posted(), "am list %d: allow_done(false) gave %s", salt,
        s.error.get_str());
  s = pop(lcq);
  CHECK(s.is_done() && s.buffer == out.list[0].base && s.size == out.total,
        "am list %d: local status", salt);
  lci::status_t r = pop(rcq);
  CHECK(r.is_done() && r.rank == g_prev && r.size == out.total &&
            r.tag == static_cast<lci::tag_t>(salt),
        "am list %d: remote status size %zu", salt, r.size);
  auto* got = static_cast<unsigned char*>(r.buffer);
  bool ok = true;
  for (size_t i = 0; i < r.size; ++i)
    ok = ok && got[i] == byte_of(g_prev, i, salt);
  CHECK(ok, "am list %d: bytes", salt);
  std::free(r.buffer);
  lci::barrier();
  check_empty(lcq, "am list");
  lci::free_comp(&lcq);
}

// A list in a graph node: graph_add_node_op copies it, so the caller's
// vector may change and go before the graph runs (a node that still read
// it would send the junk written into it).
void graph_list(int salt)
{
  pieces_t out({16, 300, 5}, g_me, salt, true);
  pieces_t in({out.total}, -1, 0, false);
  lci::comp_t rsync = lci::alloc_sync();
  lci::status_t r =
      lci::post_recv(g_prev, in.list[0].base, in.total, salt, rsync);
  lci::comp_t graph = lci::alloc_graph();
  {
    lci::buffers_t list = out.list;
    lci::graph_add_node_op(
        graph, lci::post_send_x(g_next, nullptr, 0, salt, lci::COMP_NULL)
                   .buffers(list));
    static char junk = 0;
    list.assign(list.size(), lci::buffer_t(&junk, 1));
  }
  lci::graph_start(graph);
  lci::status_t g;
  while ((g = lci::graph_test(graph)).is_retry()) lci::progress();
  r = wait(rsync, r);
  CHECK(g.is_done(), "graph list %d: graph %s", salt, g.error.get_str());
  CHECK(r.is_done() && r.size == out.total,
        "graph list %d: received %zu bytes of %zu", salt, r.size, out.total);
  CHECK(in.holds(g_prev, salt, out.total), "graph list %d: bytes", salt);
  lci::free_comp(&graph);
  lci::free_comp(&rsync);
}

// Puts and gets of a list. The region: `region_size` bytes; every rank
// puts into the next rank's region and gets from it.
void rma(lci::comp_t sigcq, lci::rcomp_t sigrc)
{
  const size_t piece = 100000, small = 24;
  const std::vector<size_t> sizes = {small, piece, 0, piece + 3, small};
  size_t total = 0;
  for (size_t s : sizes) total += s;
  const size_t region_size = 2 * total + 4096;
  std::vector<unsigned char> region(region_size, 0);
  lci::mr_t mr = lci::register_memory(region.data(), region_size);
  lci::rmr_t mine = lci::get_rmr(mr), theirs;
  lci::comp_t sync = lci::alloc_sync();
  lci::status_t r = lci::post_recv(g_next, &theirs, sizeof(theirs), 99, sync);
  lci::post_send(g_prev, &mine, sizeof(mine), 99, lci::COMP_NULL);
  wait(sync, r);
  lci::comp_t cq = lci::alloc_cq();

  // 1. put, one remote buffer per piece, scattered in reverse order
  pieces_t out(sizes, g_me, 1, true);
  lci::rbuffers_t rb;
  std::vector<size_t> at(sizes.size());
  size_t off = 0;
  for (size_t i = sizes.size(); i-- > 0;) {
    at[i] = off;
    off += sizes[i];
  }
  for (size_t i = 0; i < sizes.size(); ++i)
    rb.push_back(lci::rbuffer_t(at[i], theirs));
  lci::status_t s;
  s = post_and_pop(lci::post_put_x(g_next, nullptr, 0, cq, 0, lci::RMR_NULL)
                       .buffers(out.list)
                       .rbuffers(rb),
                   cq);
  CHECK(s.is_done() && s.size == total && s.buffer == out.list[0].base,
        "put list: status size %zu", s.size);
  lci::barrier();
  check_empty(cq, "put list");
  {
    bool ok = true;
    size_t logical = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      for (size_t j = 0; j < sizes[i]; ++j)
        ok = ok && region[at[i] + j] == byte_of(g_prev, logical + j, 1);
      logical += sizes[i];
    }
    CHECK(ok, "put list: bytes in the region");
  }
  lci::barrier();

  // 2. put with signal to consecutive bytes from remote_disp (blocking)
  pieces_t out2(sizes, g_me, 2, true);
  s = lci::post_put_x(g_next, nullptr, 0, lci::COMP_NULL, total, theirs)
          .buffers(out2.list)
          .remote_comp(sigrc)
          .tag(7)();
  CHECK(s.is_done() && s.size == total, "put list with signal: %s",
        s.error.get_str());
  lci::status_t sig = pop(sigcq);
  CHECK(sig.is_done() && sig.rank == g_prev && sig.tag == 7,
        "put list with signal: signal rank %d tag %llu", sig.rank,
        static_cast<unsigned long long>(sig.tag));
  {
    // the signal comes after every byte landed
    bool ok = true;
    for (size_t i = 0; i < total; ++i)
      ok = ok && region[total + i] == byte_of(g_prev, i, 2);
    CHECK(ok, "put list with signal: bytes when signalled");
  }
  lci::barrier();
  check_empty(sigcq, "put list with signal");

  // 3. get the next rank's region back, in pieces, with one remote
  // buffer per piece (the next rank's put 2 data, which is ours)
  pieces_t in(sizes, -1, 0, false);
  lci::rbuffers_t rb2;
  off = total;
  for (size_t i = 0; i < sizes.size(); ++i) {
    rb2.emplace_back(off, theirs);
    off += sizes[i];
  }
  s = post_and_pop(lci::post_get_x(g_next, nullptr, 0, cq, 0, lci::RMR_NULL)
                       .buffers(in.list)
                       .rbuffers(rb2),
                   cq);
  CHECK(s.is_done() && s.size == total, "get list: status");
  CHECK(in.holds(g_me, 2, total), "get list: bytes");
  lci::barrier();
  check_empty(cq, "get list");
  lci::free_comp(&cq);
  lci::free_comp(&sync);
  lci::deregister_memory(&mr);
}

template <typename F>
void expect_fatal(const char* what, const char* needle, F f)
{
  try {
    f();
    CHECK(false, "%s: no error", what);
  } catch (const lci::fatal_error& e) {
    CHECK(std::string(e.what()).find(needle) != std::string::npos,
          "%s: message \"%s\" lacks \"%s\"", what, e.what(), needle);
  }
}

void bad_lists()
{
  char a[8], b[8];
  lci::comp_t cq = lci::alloc_cq();
  lci::buffers_t two = {lci::buffer_t(a, 8), lci::buffer_t(b, 8)};
  expect_fatal("rbuffers alone", "without buffers", [&] {
    lci::post_put_x(g_next, nullptr, 0, cq, 0, lci::RMR_NULL)
        .rbuffers(lci::rbuffers_t(2))();
  });
  expect_fatal("local_buffer and buffers", "must be nullptr and 0",
               [&] { lci::post_send_x(g_next, a, 8, 0, cq).buffers(two)(); });
  lci::buffers_t many(lci::MAX_BUFFERS + 1, lci::buffer_t(a, 1));
  expect_fatal("too many", "exceeds MAX_BUFFERS", [&] {
    lci::post_send_x(g_next, nullptr, 0, 0, cq).buffers(many)();
  });
  lci::buffers_t null_one = {lci::buffer_t(a, 8), lci::buffer_t(nullptr, 4)};
  expect_fatal("null buffer", "buffers[1] is a null buffer with size 4", [&] {
    lci::post_send_x(g_next, nullptr, 0, 0, cq).buffers(null_one)();
  });
  expect_fatal("count mismatch", "2 buffers but 3 rbuffers", [&] {
    lci::post_put_x(g_next, nullptr, 0, cq, 0, lci::RMR_NULL)
        .buffers(two)
        .rbuffers(lci::rbuffers_t(3))();
  });
  expect_fatal("bad rank", "out of range", [&] {
    lci::post_send_x(g_n, nullptr, 0, 0, cq).buffers(two)();
  });
  // a bad remote buffer after good ones: nothing is put
  {
    char region[8] = {0};
    lci::mr_t mr = lci::register_memory(region, sizeof(region));
    lci::rmr_t own = lci::get_rmr(mr);
    lci::buffers_t three = {lci::buffer_t(a, 4), lci::buffer_t(b, 4),
                            lci::buffer_t(a, 4)};
    a[0] = 'x';
    lci::rbuffers_t rb = {lci::rbuffer_t(0, own), lci::rbuffer_t(4, own),
                          lci::rbuffer_t(0)};
    expect_fatal("bad third rbuffer", "not made by get_rmr", [&] {
      lci::post_put_x(g_me, nullptr, 0, cq, 0, lci::RMR_NULL)
          .buffers(three)
          .rbuffers(rb)();
    });
    rb[2] = lci::rbuffer_t(6, own);
    expect_fatal("rbuffer outside its region", "outside the 8-byte", [&] {
      lci::post_put_x(g_me, nullptr, 0, cq, 0, lci::RMR_NULL)
          .buffers(three)
          .rbuffers(rb)();
    });
    for (int i = 0; i < 100; ++i) lci::progress();
    CHECK(region[0] == 0, "a refused list put its first buffer");
    lci::deregister_memory(&mr);
  }
  // nothing was posted by any of them
  for (int i = 0; i < 100; ++i) lci::progress();
  CHECK(lci::cq_pop(cq).is_retry(), "a refused list signalled");
  lci::free_comp(&cq);
}

}  // namespace

int main()
{
  lci::g_runtime_init();
  mp::g_rank = g_me = lci::get_rank_me();
  g_n = lci::get_rank_n();
  g_next = (g_me + 1) % g_n;
  g_prev = (g_me + g_n - 1) % g_n;
  const size_t eager = lci::get_max_bcopy_size();

  // eager: gathered into one packet; into a list and into one buffer
  send_recv({3, 40, 1, 0, 200}, {50, 200}, 1);
  send_recv({3, 40, 1, 0, 200}, {}, 2);
  // the list fills exactly one packet
  send_recv({eager - 100, 100}, {1, eager}, 3);
  // rendezvous: a list above the eager limit
  send_recv({eager, 70000, 5}, {10, 3 * eager, 70000}, 4);
  send_recv({eager, 70000, 5}, {}, 5);
  // a receive list larger than the message
  send_recv({100}, {30, 30, 300}, 6);

  graph_list(10);

  lci::comp_t rcq = lci::alloc_cq();
  lci::rcomp_t rcomp = lci::register_rcomp(rcq);
  lci::barrier();  // every rank's handle is registered before an am names it
  am_list(rcomp, rcq, {8, 8, 8}, 7);
  am_list(rcomp, rcq, {eager / 2, eager, 1000}, 8);

  // blocking send of a list (COMP_NULL)
  {
    pieces_t out({16, 3 * eager}, g_me, 9, true);
    pieces_t in({out.total}, -1, 0, false);
    lci::comp_t sync = lci::alloc_sync();
    lci::status_t r =
        lci::post_recv(g_prev, in.list[0].base, in.total, 9, sync);
    lci::status_t s = lci::post_send_x(g_next, nullptr, 0, 9, lci::COMP_NULL)
                          .buffers(out.list)();
    CHECK(s.is_done() && s.size == out.total, "blocking send list: %s",
          s.error.get_str());
    wait(sync, r);
    CHECK(in.holds(g_prev, 9, out.total), "blocking send list: bytes");
    lci::free_comp(&sync);
  }

  lci::comp_t sigcq = lci::alloc_cq();
  lci::rcomp_t sigrc = lci::register_rcomp(sigcq);
  lci::barrier();
  rma(sigcq, sigrc);
  bad_lists();

  lci::barrier();
  lci::free_comp(&sigcq);
  lci::free_comp(&rcq);
  lci::g_runtime_fina();
  if (mp::g_failures.load() == 0 && g_me == 0)
    std::printf("mp_buffers: %d ranks passed\n", g_n);
  return mp::g_failures.load() == 0 ? 0 : 1;
}
