// The bound on the rendezvous active messages a device receives at once
// (runtime attribute max_am_rdv_bytes, core/rendezvous.cpp), across
// processes. The runtime's bound is one 256 KiB message; every rank sends
// to every other rank through the default device, its receives counted by
// an allocator that knows how many large buffers are out at once.
//  1. A burst: each rank posts all its 256 KiB messages before anyone
//     receives, then receives, freeing each message as it takes it: with
//     the bound (one message) one large buffer at most is ever out
//     (without it a single progress call answers every request it finds
//     and takes a buffer for each), the messages of each sender come in the
//     order it sent them, every byte checked.
//  2. The receiver frees nothing until every message is in (the bound
//     counts messages in flight, not buffers held): all arrive.
//  3. Mixed: messages of 100 KiB (two fit the bound), 256 KiB and 1 MiB
//     (above the bound: it goes alone), eager
//  active messages and
//     rendezvous sends between them, two threads receiving on the same
//     device: nothing lost or duplicated.
// Exit status 0 on success. Run with lcrun -n N (N >= 2).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <lci.hpp>
#include <mutex>
#include <thread>
#include <vector>

#include "mp_check.hpp"

namespace
{

using mp::g_failures;
using mp::g_rank;

constexpr size_t kBound = 256 << 10;

// Counts the buffers of at least kLarge bytes given out and not yet back.
class counting_t final : public lci::allocator_base_t
{
 public:
  static constexpr size_t kLarge = 64 << 10;
  void* allocate(size_t size) override
  {
    auto* p = static_cast<char*>(std::malloc(size + 16));
    if (!p) return nullptr;
    std::memcpy(p, &size, sizeof(size));
    if (size >= kLarge) {
      const long now = out_.fetch_add(1) + 1;
      long m = max_out_.load();
      while (now > m && !max_out_.compare_exchange_weak(m, now)) {
      }
    }
    return p + 16;
  }
  void deallocate(void* ptr) override
  {
    if (!ptr) return;
    char* p = static_cast<char*>(ptr) - 16;
    size_t size;
    std::memcpy(&size, p, sizeof(size));
    if (size >= kLarge) out_.fetch_sub(1);
    std::free(p);
  }
  long max_out() const { return max_out_.load(); }
  void reset_max() { max_out_.store(out_.load()); }

 private:
  std::atomic<long> out_{0};
  std::atomic<long> max_out_{0};
};

counting_t g_alloc;

unsigned char pattern(int src, uint64_t seq, size_t i)
{
  uint64_t x = (uint64_t(src) << 40) ^ (seq << 20) ^ i;
  x *= 0x9E3779B97F4A7C15ull;
  return static_cast<unsigned char>(x >> 56);
}

// a message: its sequence number in the first 8 bytes, then the pattern
std::vector<unsigned char> message(int src, uint64_t seq, size_t size)
{
  std::vector<unsigned char> b(size);
  for (size_t i = 0; i < size; ++i) b[i] = pattern(src, seq, i);
  std::memcpy(b.data(), &seq, sizeof(seq));
  return b;
}

bool intact(const void* p, size_t size, int src, uint64_t* seq)
{
  auto* b = static_cast<const unsigned char*>(p);
  std::memcpy(seq, b, sizeof(*seq));
  for (size_t i = sizeof(*seq); i < size; ++i)
    if (b[i] != pattern(src, *seq, i)) return false;
  return true;
}

bool progress_until(const std::function<bool()>& pred)
{
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!pred()) {
    lci::progress();
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
  return true;
}

// Retries a post (progressing in between) until it is taken: 1 when it
// is pending, so its completion object will count it, 0 when it completed
// at once and nothing will. The caller adds that to the count it waits
// for, rather than bumping the counter itself, which a progress call in
// another thread may be signalling at the same time.
template <typename F>
long post_taken(F post)
{
  for (;;) {
    lci::status_t s = post();
    if (!s.is_retry()) return s.is_done() ? 0 : 1;
    lci::progress();
  }
}

// Posts one active message (its buffer must live until `sends` counts it);
// as post_taken.
long post(int to, std::vector<unsigned char>& b, lci::comp_t sends,
          lci::rcomp_t rcomp, uint64_t tag)
{
  return post_taken([&] {
    return lci::post_am_x(to, b.data(), b.size(), sends, rcomp).tag(tag)();
  });
}

// 1 and 2: n messages of kBound bytes to every other rank, all posted
// before any is received; `free_at_once` frees each as it comes, else all
// at the end.
void burst(lci::comp_t cq, lci::rcomp_t rcomp, bool free_at_once)
{
  const int me = g_rank, nranks = lci::get_rank_n();
  const uint64_t n = 24;
  const char* what = free_at_once ? "burst" : "held";
  std::vector<std::vector<unsigned char>> out;
  out.reserve(n * nranks);
  lci::comp_t sends = lci::alloc_counter();
  lci::barrier();
  g_alloc.reset_max();
  long nposted = 0;
  for (uint64_t seq = 0; seq < n; ++seq)
    for (int to = 0; to < nranks; ++to) {
      if (to == me) continue;
      out.push_back(message(me, seq, kBound));
      nposted += post(to, out.back(), sends, rcomp, 1);
    }
  // every request waits at its receiver before it receives
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const long expected = static_cast<long>(n) * (nranks - 1);
  std::vector<uint64_t> next_seq(nranks, 0);
  std::vector<void*> held;
  long got = 0;
  CHECK(progress_until([&] {
          lci::status_t s = lci::cq_pop(cq);
          if (s.is_retry()) return false;
          uint64_t seq = 0;
          CHECK(s.size == kBound, "%s: a %zu-byte message", what, s.size);
          CHECK(s.rank >= 0 && s.rank < nranks && s.rank != me,
                "%s: from rank %d", what, s.rank);
          if (s.size == kBound && s.rank >= 0 && s.rank < nranks) {
            CHECK(intact(s.buffer, s.size, s.rank, &seq),
                  "%s: message %lu from rank %d corrupt", what,
                  static_cast<unsigned long>(seq), s.rank);
            CHECK(seq == next_seq[s.rank],
                  "%s: message %lu from rank %d where %lu was next", what,
                  static_cast<unsigned long>(seq), s.rank,
                  static_cast<unsigned long>(next_seq[s.rank]));
            next_seq[s.rank] = seq + 1;
          }
          if (free_at_once)
            g_alloc.deallocate(s.buffer);
          else
            held.push_back(s.buffer);
          return ++got == expected;
        }),
        "%s: %ld of %ld messages in 60 s", what, got, expected);
  CHECK(progress_until([&] { return lci::counter_get(sends) == nposted; }),
        "%s: %ld of %ld pending sends complete", what, lci::counter_get(sends),
        nposted);
  if (free_at_once)
    CHECK(g_alloc.max_out() == 1,
          "%s: %ld large buffers out at once, the bound lets one through", what,
          g_alloc.max_out());
  for (void* p : held) g_alloc.deallocate(p);
  lci::free_comp(&sends);
}

// 3: a mix of sizes and kinds, two threads receiving.
void mixed(lci::comp_t cq, lci::rcomp_t rcomp)
{
  const int me = g_rank, nranks = lci::get_rank_n();
  const size_t sizes[] = {100, 100 << 10, kBound, 1 << 20, 100 << 10};
  const uint64_t rounds = 6;
  const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
  const lci::tag_t send_tag = 77;
  std::vector<std::vector<unsigned char>> out, sends_out, recv_in;
  out.reserve(rounds * nsizes * nranks);
  sends_out.reserve(rounds * nranks);
  recv_in.reserve(rounds * nranks);
  lci::comp_t sends = lci::alloc_counter();
  lci::comp_t recvs = lci::alloc_counter();
  long nposted = 0, nrecvs = 0;
  // the rendezvous receives first (their sends may come before the barrier
  // returns elsewhere)
  for (int from = 0; from < nranks; ++from) {
    if (from == me) continue;
    for (uint64_t r = 0; r < rounds; ++r) {
      recv_in.emplace_back(300 << 10);
      nrecvs += post_taken([&] {
        return lci::post_recv(from, recv_in.back().data(),
                              recv_in.back().size(), send_tag + r, recvs);
      });
    }
  }
  lci::barrier();
  const long expected = static_cast<long>(rounds * nsizes) * (nranks - 1);
  std::atomic<long> got{0};
  std::mutex seen_mu;
  std::vector<std::vector<int>> seen(nranks,
                                     std::vector<int>(rounds * nsizes, 0));
  auto receive = [&] {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (got.load() < expected &&
           std::chrono::steady_clock::now() < deadline) {
      lci::status_t s = lci::cq_pop(cq);
      if (s.is_retry()) {
        lci::progress();
        continue;
      }
      uint64_t seq = 0;
      const bool ok = s.rank >= 0 && s.rank < nranks && s.size >= 8 &&
                      intact(s.buffer, s.size, s.rank, &seq) &&
                      seq < rounds * nsizes && sizes[seq % nsizes] == s.size;
      CHECK(ok, "mixed: a %zu-byte message from rank %d corrupt", s.size,
            s.rank);
      if (ok) {
        std::lock_guard<std::mutex> lock(seen_mu);
        ++seen[s.rank][seq];
      }
      g_alloc.deallocate(s.buffer);
      got.fetch_add(1);
    }
  };
  std::thread helper(receive);
  for (uint64_t r = 0; r < rounds; ++r)
    for (int to = 0; to < nranks; ++to) {
      if (to == me) continue;
      for (size_t k = 0; k < nsizes; ++k) {
        const uint64_t seq = r * nsizes + k;
        out.push_back(message(me, seq, sizes[k]));
        nposted += post(to, out.back(), sends, rcomp, 2);
      }
      sends_out.push_back(message(me, r, 300 << 10));
      nposted += post_taken([&] {
        return lci::post_send(to, sends_out.back().data(),
                              sends_out.back().size(), send_tag + r, sends);
      });
    }
  receive();
  helper.join();
  CHECK(got.load() == expected, "mixed: %ld of %ld messages in 60 s",
        got.load(), expected);
  for (int from = 0; from < nranks; ++from)
    for (size_t q = 0; from != me && q < rounds * nsizes; ++q)
      CHECK(seen[from][q] == 1, "mixed: message %zu from rank %d came %d times",
            q, from, seen[from][q]);
  CHECK(progress_until([&] {
          return lci::counter_get(sends) == nposted &&
                 lci::counter_get(recvs) == nrecvs;
        }),
        "mixed: %ld of %ld pending sends and %ld of %ld receives complete",
        lci::counter_get(sends), nposted, lci::counter_get(recvs), nrecvs);
  size_t i = 0;
  for (int from = 0; from < nranks; ++from) {
    if (from == me) continue;
    for (uint64_t r = 0; r < rounds; ++r, ++i) {
      uint64_t seq = 0;
      CHECK(
          intact(recv_in[i].data(), recv_in[i].size(), from, &seq) && seq == r,
          "mixed: the send %lu from rank %d corrupt",
          static_cast<unsigned long>(r), from);
    }
  }
  lci::free_comp(&sends);
  lci::free_comp(&recvs);
}

}  // namespace

int main()
{
  try {
    lci::g_runtime_init_x().max_am_rdv_bytes(kBound)();
    lci::set_allocator(&g_alloc);
    g_rank = lci::get_rank_me();
    const int nranks = lci::get_rank_n();
    if (nranks < 2) {
      std::fprintf(stderr, "mp_am_gate: run with 2 ranks or more\n");
      return 2;
    }
    lci::comp_t cq = lci::alloc_cq();
    lci::rcomp_t rcomp = lci::register_rcomp(cq);
    burst(cq, rcomp, true);
    burst(cq, rcomp, false);
    mixed(cq, rcomp);
    lci::barrier();
    lci::free_comp(&cq);
    lci::set_allocator(nullptr);
    lci::g_runtime_fina();
    if (g_rank == 0)
      std::printf("mp_am_gate: %d ranks: %s\n", nranks,
                  g_failures.load() ? "FAILED" : "ok");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
    return 1;
  }
  return mp::exit_status();
}
