// Multi-process check of a handler that waits for its peer's traffic by
// progressing its own device (run with lcrun -n 2). Rank 0 sends rank 1
// numbered active messages of eager sizes (8 bytes to 4000, so the native
// shm backend's rings hold one-slot and many-slot messages), in pairs: the
// first of a pair makes rank 1's handler wait, inside the delivery, until
// the second one has been delivered. For even pairs rank 0 sends the second
// message at once (it usually arrives with the first, in the same poll);
// for odd pairs only once the handler has answered (new traffic, which the
// handler's own polls must find). Checked on rank 1: every message once,
// in the order sent, with every byte; no wait times out. Exit status 0 on
// success.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <lci.hpp>
#include <vector>

#include "mp_check.hpp"

namespace
{

using mp::g_failures;
using mp::g_rank;

constexpr uint32_t kPairs = 400;
constexpr size_t kSizes[] = {8, 24, 100, 1000, 4000};

unsigned char pattern(uint32_t seq, size_t i)
{
  return static_cast<unsigned char>(seq * 31 + i * 7 + 1);
}

size_t size_of(uint32_t seq) { return kSizes[seq % 5]; }

// The message `seq` (its number in its first 4 bytes, when it has room).
std::vector<unsigned char> message(uint32_t seq)
{
  std::vector<unsigned char> m(size_of(seq));
  for (size_t i = 0; i < m.size(); ++i) m[i] = pattern(seq, i);
  std::memcpy(m.data(), &seq, sizeof(seq));
  return m;
}

template <typename Pred>
bool progress_until(Pred pred)
{
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!pred()) {
    lci::progress();
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
  return true;
}

template <typename Op>
void post(Op&& op)
{
  for (;;) {
    lci::status_t s = op();
    if (!s.is_retry()) return;
    lci::progress();
  }
}

std::atomic<uint32_t> g_next{0};     // rank 1: the number expected next
std::atomic<uint32_t> g_answers{0};  // rank 0: answers from the handler
lci::rcomp_t g_to_rank1, g_to_rank0;

// rank 1: one message of rank 0
void on_message(lci::status_t s)
{
  uint32_t seq = UINT32_MAX;
  if (s.size >= sizeof(seq)) std::memcpy(&seq, s.buffer, sizeof(seq));
  const uint32_t want = g_next.load();
  CHECK(seq == want, "message %u arrived when %u was next", seq, want);
  CHECK(s.size == size_of(want), "message %u has %zu bytes", want, s.size);
  if (seq == want && s.size == size_of(want)) {
    std::vector<unsigned char> m = message(seq);
    CHECK(std::memcmp(m.data(), s.buffer, m.size()) == 0,
          "message %u: wrong bytes", seq);
  }
  std::free(s.buffer);
  g_next.store(want + 1);
  if (seq % 2 != 0) return;
  // the first of a pair: wait inside the delivery for the second
  if ((seq / 2) % 2 != 0) {
    uint32_t v = seq;
    post([&] {
      return lci::post_am(0, &v, sizeof(v), lci::COMP_NULL_RETRY, g_to_rank0);
    });
  }
  CHECK(progress_until([&] { return g_next.load() > seq + 1; }),
        "the handler of message %u timed out waiting for message %u", seq,
        seq + 1);
}

// rank 0: the handler's answer
void on_answer(lci::status_t s)
{
  std::free(s.buffer);
  g_answers.fetch_add(1);
}

void send(uint32_t seq)
{
  std::vector<unsigned char> m = message(seq);
  post([&] {
    return lci::post_am(1, m.data(), m.size(), lci::COMP_NULL_RETRY,
                        g_to_rank1);
  });
}

}  // namespace

int main()
{
  try {
    if (!mp::init_ranks("mp_nested", 2)) return 1;
    // rcomps are numbered in registration order: both ranks register
    // both, so each one's number is the same on both
    lci::comp_t h1 = lci::alloc_handler(on_message);
    lci::comp_t h0 = lci::alloc_handler(on_answer);
    g_to_rank1 = lci::register_rcomp(h1);
    g_to_rank0 = lci::register_rcomp(h0);
    lci::barrier();
    if (g_rank == 0) {
      uint32_t answered = 0;
      for (uint32_t p = 0; p < kPairs; ++p) {
        send(2 * p);
        if (p % 2 != 0) {
          ++answered;
          CHECK(progress_until([&] { return g_answers.load() >= answered; }),
                "no answer to message %u", 2 * p);
        }
        send(2 * p + 1);
      }
    } else {
      CHECK(progress_until([&] { return g_next.load() >= 2 * kPairs; }),
            "%u of %u messages arrived", g_next.load(), 2 * kPairs);
    }
    lci::barrier();
    std::printf("mp_nested: rank %d: %s (%d failures)\n", g_rank,
                g_failures ? "FAILED" : "ok", g_failures.load());
    lci::deregister_rcomp(g_to_rank0);
    lci::deregister_rcomp(g_to_rank1);
    lci::free_comp(&h0);
    lci::free_comp(&h1);
    lci::g_runtime_fina();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mp_nested: rank %d: %s\n", g_rank, e.what());
    return 1;
  }
  return g_failures ? 1 : 0;
}
