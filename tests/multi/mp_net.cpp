// The raw network layer (net_post_*, net_poll_cq) between 2 ranks: the
// runtime's default device without pre-posted receives
// (alloc_default_packet_pool false) carries sends and receives of every
// size, inject sends, puts with and without immediate data (inject forms
// too) and gets; each completion is checked (opcode, rank, user_context,
// length, immediate data) and so is every byte. Then the bad input: a raw
// receive on a device that pre-posts its own, ranks out of range, null
// buffers, immediate data on a message, an inject above its limit, an
// empty rmr.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "mp_check.hpp"

namespace
{

std::vector<lci::net_status_t> g_seen;  // polled, not yet waited for

// Polls once, keeping what completed for wait_for (a refused post calls
// it: a provider may need the poll to make room).
void poll_some()
{
  lci::net_status_t st[8];
  size_t n = lci::net_poll_cq(8, st);
  g_seen.insert(g_seen.end(), st, st + n);
}

// Polls until a completion of `op` with `ctx` arrived (30 s at most);
// returns it.
lci::net_status_t wait_for(lci::net_opcode_t op, void* ctx,
                           const std::function<void()>& also = {})
{
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    for (size_t i = 0; i < g_seen.size(); ++i) {
      if (g_seen[i].opcode == op && g_seen[i].user_context == ctx) {
        lci::net_status_t s = g_seen[i];
        g_seen.erase(g_seen.begin() + static_cast<long>(i));
        return s;
      }
    }
    lci::net_status_t st[8];
    size_t n = lci::net_poll_cq(8, st);
    for (size_t i = 0; i < n; ++i) {
      CHECK(st[i].opcode != lci::net_opcode_t::ERROR,
            "error completion, rank %d", st[i].rank);
      g_seen.push_back(st[i]);
    }
    if (also) also();
    if (std::chrono::steady_clock::now() > deadline) {
      CHECK(false, "no %s completion for %p", lci::get_net_opcode_str(op), ctx);
      lci::net_status_t none{};
      none.opcode = lci::net_opcode_t::ERROR;
      return none;
    }
  }
}

void fill(char* p, size_t n, int seed)
{
  for (size_t i = 0; i < n; ++i)
    p[i] = static_cast<char>((i * 7 + seed) & 0xff);
}
bool same(const char* p, size_t n, int seed)
{
  for (size_t i = 0; i < n; ++i)
    if (p[i] != static_cast<char>((i * 7 + seed) & 0xff)) return false;
  return true;
}

// A message from the peer into buf (posted first, then waited for).
void recv_from_peer(void* buf, size_t size, size_t expect, int* ctx)
{
  lci::error_t e;
  while ((e = lci::net_post_recv_x(buf, size, lci::MR_HOST).user_context(ctx)())
             .is_retry())
    poll_some();
  CHECK(e.is_posted(), "net_post_recv: %s", e.get_str());
  lci::net_status_t s = wait_for(lci::net_opcode_t::RECV, ctx);
  CHECK(s.length == expect, "RECV length %zu, want %zu", s.length, expect);
  // the sender, as upstream's backends report it (2 ranks: the other one)
  CHECK(s.rank == 1 - lci::get_rank_me(), "RECV rank %d", s.rank);
}

void send_to_peer(int peer, void* buf, size_t size, int* ctx)
{
  lci::error_t e;
  while ((e = lci::net_post_send_x(peer, buf, size, lci::MR_HOST)
                  .user_context(ctx)())
             .is_retry())
    poll_some();
  CHECK(e.is_posted(), "net_post_send: %s", e.get_str());
  lci::net_status_t s = wait_for(lci::net_opcode_t::SEND, ctx);
  CHECK(s.rank == peer && s.length == size, "SEND rank %d length %zu", s.rank,
        s.length);
}

// An empty message each way (rank 0 first), polling all along.
void exchange(int me, int peer, char* out, char* in, int* sctx, int* rctx)
{
  if (me == 0) {
    send_to_peer(peer, out, 0, sctx);
    recv_from_peer(in, 64, 0, rctx);
  } else {
    recv_from_peer(in, 64, 0, rctx);
    send_to_peer(peer, out, 0, sctx);
  }
}

std::string error_of(const std::function<void()>& f)
{
  try {
    f();
  } catch (const lci::fatal_error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_error(const char* what, const std::function<void()>& f,
                  const char* call, const char* word)
{
  std::string m = error_of(f);
  CHECK(m.find(call) != std::string::npos && m.find(word) != std::string::npos,
        "%s: got \"%s\", want %s and %s", what, m.c_str(), call, word);
}

}  // namespace

int main()
{
  lci::g_runtime_init_x().alloc_default_packet_pool(false)();
  mp::g_rank = lci::get_rank_me();
  if (lci::get_rank_n() != 2) {
    std::fprintf(stderr, "mp_net: run with 2 ranks\n");
    return 2;
  }
  const int me = lci::get_rank_me();
  const int peer = 1 - me;
  CHECK(lci::get_default_device().get_attr_net_max_recvs() == 0,
        "net_max_recvs %zu",
        lci::get_default_device().get_attr_net_max_recvs());
  CHECK(lci::net_poll_cq(4, nullptr) == 0, "completions before any post");
  int rctx = 0, sctx = 0;

  // sends and receives, ping-pong, every size; rank 0 starts
  std::vector<char> out(65536), in(65536);
  for (size_t size : {size_t(0), size_t(1), size_t(64), size_t(1000),
                      size_t(8192), size_t(65536)}) {
    for (int round = 0; round < 4; ++round) {
      const int seed = static_cast<int>(size) + round;
      if (me == 0) {
        fill(out.data(), size, seed);
        send_to_peer(peer, out.data(), size, &sctx);
        recv_from_peer(in.data(), in.size(), size, &rctx);
        CHECK(same(in.data(), size, seed + 1), "echo of %zu bytes", size);
      } else {
        recv_from_peer(in.data(), in.size(), size, &rctx);
        CHECK(same(in.data(), size, seed), "message of %zu bytes", size);
        fill(out.data(), size, seed + 1);
        send_to_peer(peer, out.data(), size, &sctx);
      }
    }
  }
  // an inject send: done at once, no completion
  {
    char small[16];
    fill(small, sizeof(small), 99);
    if (me == 0) {
      lci::error_t e;
      while ((e = lci::net_post_sends(peer, small, sizeof(small))).is_retry())
        poll_some();
      CHECK(e.is_done(), "net_post_sends: %s", e.get_str());
      recv_from_peer(in.data(), in.size(), 0, &rctx);
    } else {
      recv_from_peer(in.data(), in.size(), sizeof(small), &rctx);
      CHECK(same(in.data(), sizeof(small), 99), "inject send's bytes");
      send_to_peer(peer, out.data(), 0, &sctx);
    }
  }

  // RMA: each rank's region, its rmr sent to the peer
  const size_t kRegion = 1 << 16;
  std::vector<char> region(kRegion, 0), local(kRegion);
  fill(region.data() + kRegion / 2, kRegion / 2, 40 + me);  // what gets read
  lci::mr_t mr = lci::register_memory(region.data(), kRegion);
  lci::mr_t lmr = lci::register_memory(local.data(), kRegion);
  lci::rmr_t mine = lci::get_rmr(mr), theirs;
  if (me == 0) {
    send_to_peer(peer, &mine, sizeof(mine), &sctx);
    recv_from_peer(&theirs, sizeof(theirs), sizeof(theirs), &rctx);
  } else {
    recv_from_peer(&theirs, sizeof(theirs), sizeof(theirs), &rctx);
    send_to_peer(peer, &mine, sizeof(mine), &sctx);
  }
  const bool imm = lci::get_default_net_context().get_attr_support_putimm();
  int wctx = 0, gctx = 0;
  // put 1000 bytes at offset 100, with the registration
  fill(local.data(), 1000, 10 + me);
  lci::error_t e;
  while ((e = lci::net_post_put_x(peer, local.data(), 1000, lmr, 100, theirs)
                  .user_context(&wctx)())
             .is_retry())
    poll_some();
  CHECK(e.is_posted(), "net_post_put: %s", e.get_str());
  lci::net_status_t s = wait_for(lci::net_opcode_t::WRITE, &wctx);
  CHECK(s.rank == peer, "WRITE rank %d", s.rank);
  // an inject put of 8 bytes at offset 4000, from a buffer reused at once
  char eight[8];
  fill(eight, 8, 20 + me);
  while ((e = lci::net_post_puts(peer, eight, 8, 4000, theirs)).is_retry())
    poll_some();
  CHECK(e.is_done(), "net_post_puts: %s", e.get_str());
  std::memset(eight, 0, sizeof(eight));
  // the peer's puts land here: wait for their bytes (polling: a software
  // provider needs the target's progress)
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!(same(region.data() + 100, 1000, 10 + peer) &&
           same(region.data() + 4000, 8, 20 + peer)) &&
         std::chrono::steady_clock::now() < deadline) {
    lci::net_status_t st[4];
    size_t n = lci::net_poll_cq(4, st);
    g_seen.insert(g_seen.end(), st, st + n);
  }
  CHECK(same(region.data() + 100, 1000, 10 + peer), "put's bytes");
  CHECK(same(region.data() + 4000, 8, 20 + peer), "inject put's bytes");
  if (imm) {
    // with immediate data: the REMOTE_WRITE arrives once the data is there
    fill(local.data(), 2048, 30 + me);
    while (
        (e = lci::net_post_putImm_x(peer, local.data(), 2048, lmr, 8192, theirs)
                 .imm_data(0xabc0 + static_cast<unsigned>(me))
                 .user_context(&wctx)())
            .is_retry())
      poll_some();
    CHECK(e.is_posted(), "net_post_putImm: %s", e.get_str());
    wait_for(lci::net_opcode_t::WRITE, &wctx);
    s = wait_for(lci::net_opcode_t::REMOTE_WRITE, nullptr);
    CHECK(s.imm_data == 0xabc0u + static_cast<unsigned>(peer), "imm %x",
          s.imm_data);
    CHECK(same(region.data() + 8192, 2048, 30 + peer), "putImm's bytes");
    // inject form, 4 bytes
    char four[4];
    fill(four, 4, 50 + me);
    while ((e = lci::net_post_putImms_x(peer, four, 4, 16384, theirs)
                    .imm_data(0x77)())
               .is_retry())
      poll_some();
    CHECK(e.is_done(), "net_post_putImms: %s", e.get_str());
    s = wait_for(lci::net_opcode_t::REMOTE_WRITE, nullptr);
    CHECK(s.imm_data == 0x77u, "imm %x", s.imm_data);
    CHECK(same(region.data() + 16384, 4, 50 + peer), "putImms's bytes");
  } else {
    expect_error(
        "putImm without immediate data",
        [&] { lci::net_post_putImm(peer, local.data(), 8, lmr, 0, theirs); },
        "net_post_putImm", "immediate");
  }
  // get the peer's second half
  std::memset(local.data(), 0, kRegion);
  while ((e = lci::net_post_get_x(peer, local.data(), kRegion / 2, lmr,
                                  kRegion / 2, theirs)
                  .user_context(&gctx)())
             .is_retry())
    poll_some();
  CHECK(e.is_posted(), "net_post_get: %s", e.get_str());
  s = wait_for(lci::net_opcode_t::READ, &gctx);
  CHECK(s.rank == peer && s.length == kRegion / 2, "READ rank %d length %zu",
        s.rank, s.length);
  CHECK(same(local.data(), kRegion / 2, 40 + peer), "get's bytes");
  // the peer's get may need this rank's polls (a software provider such as
  // tcp): an exchange before the allocation below, which polls nothing
  exchange(me, peer, out.data(), in.data(), &sctx, &rctx);

  // bad input, each a fatal_error naming the call and the problem
  expect_error(
      "rank", [&] { lci::net_post_send(2, out.data(), 8, lci::MR_HOST); },
      "net_post_send", "rank 2");
  expect_error(
      "null buffer",
      [&] { lci::net_post_send(peer, nullptr, 8, lci::MR_HOST); },
      "net_post_send", "null buffer");
  expect_error(
      "null receive buffer",
      [&] { lci::net_post_recv(nullptr, 8, lci::MR_HOST); }, "net_post_recv",
      "null buffer");
  expect_error(
      "imm on a send",
      [&] {
        lci::net_post_send_x(peer, out.data(), 8, lci::MR_HOST).imm_data(5)();
      },
      "net_post_send", "imm_data 5");
  expect_error(
      "inject put too large",
      [&] { lci::net_post_puts(peer, out.data(), 65536, 0, theirs); },
      "net_post_puts", "max_inject_size");
  expect_error(
      "empty rmr",
      [&] {
        lci::net_post_put(peer, out.data(), 8, lci::MR_HOST, 0, lci::RMR_NULL);
      },
      "net_post_put", "empty rmr");
  expect_error(
      "outside the region",
      [&] {
        lci::net_post_get(peer, local.data(), 64, lmr, kRegion - 8, theirs);
      },
      "net_post_get", "outside");
  {
    // a device of the library's own (it pre-posts receives): no raw receive
    lci::device_t d = lci::alloc_device();
    expect_error(
        "library device",
        [&] { lci::net_post_recv_x(in.data(), 8, lci::MR_HOST).device(d)(); },
        "net_post_recv", "net_max_recvs");
    lci::free_device(&d);
  }

  {
    // a raw device of its own (net_max_recvs 0) beside the default one: a
    // message each way on it, then freed
    lci::device_t raw = lci::alloc_device_x().net_max_recvs(0)();
    CHECK(raw.get_attr_net_max_recvs() == 0, "raw device's net_max_recvs %zu",
          raw.get_attr_net_max_recvs());
    long v = 1000 + me, got = -1;
    int rc = 0, sc = 0, seen = 0;
    // (polls while a post is refused: a provider may need it to make room)
    auto poll_raw = [&] {
      lci::net_status_t st;
      if (lci::net_poll_cq_x(1, &st).device(raw)() != 1) return;
      CHECK(
          (st.opcode == lci::net_opcode_t::RECV && st.user_context == &rc &&
           st.rank == peer) ||
              (st.opcode == lci::net_opcode_t::SEND && st.user_context == &sc),
          "raw device completion %s", lci::get_net_opcode_str(st.opcode));
      ++seen;
    };
    while (lci::net_post_recv_x(&got, sizeof(got), lci::MR_HOST)
               .device(raw)
               .user_context(&rc)()
               .is_retry())
      poll_raw();
    while (lci::net_post_send_x(peer, &v, sizeof(v), lci::MR_HOST)
               .device(raw)
               .user_context(&sc)()
               .is_retry())
      poll_raw();
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (seen < 2 && std::chrono::steady_clock::now() < until) poll_raw();
    CHECK(seen == 2 && got == 1000 + peer,
          "raw device: %d completions, got %ld", seen, got);
    // the default device got nothing of it
    CHECK(lci::net_poll_cq(4, nullptr) == 0, "default device completions");
    lci::free_device(&raw);
  }

  // done: neither frees its region before the peer is done with it
  exchange(me, peer, out.data(), in.data(), &sctx, &rctx);
  CHECK(g_seen.empty(), "%zu completions nobody waited for", g_seen.size());
  lci::deregister_memory(&mr);
  lci::deregister_memory(&lmr);
  lci::g_runtime_fina();
  if (mp::g_failures.load() != 0) return 1;
  std::printf("rank %d: mp_net passed (putimm %s)\n", me, imm ? "yes" : "no");
  return 0;
}
