// Small blocking collectives through the node-local team's direct path
// (shm_team_t::run_small: one round in the control line, run from the
// caller when the team has nothing queued). Run with the flat team (every
// rank on one node). Modes:
//   path      every 8-byte (and smaller) collective, blocking, checked
//             against a serial computation; allreduce and barrier take the
//             direct path on every rank (the team's count of such runs
//             grows by one per call); then nonblocking collectives queued
//             ahead of a blocking one (rank 0 arrives late): the blocking
//             one must wait its turn (it does not take the direct path
//             while the queue is not empty) and every result is right;
//             with more ranks than cores, barriers that rank 0 joins
//             late (a sleep of 100 us) are waited for in the direct path
//             (the waiting ranks yield between looks, they do not hand
//             over to the general path)
//   threads   the main thread runs blocking small collectives on the
//             runtime's collective engine while two threads run
//             collectives (blocking and nonblocking) on engines of their
//             own, whose progress calls poll the team meanwhile
//   mismatch  rank 1 calls an allreduce of 16 bytes where the others call
//             one of 8: every rank raises fatal_error naming a rank whose
//             call differs; a barrier afterwards raises too, on every rank
//             (no rank waits for good)
//   mismatch-bcast  rank 1 expects 16 bytes from a broadcast whose root
//             (rank 0) sends 8: rank 1 raises naming rank 0; the root needs
//             nobody and returns; the barrier after it raises on every rank
//             (rank 1's team stopped: the others name it)
// Exit status 0 when every check passed.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <lci.hpp>
#include <string>
#include <thread>
#include <vector>

#include "coll/shm_team.hpp"
#include "mp_check.hpp"
#include "resource/runtime.hpp"

namespace
{

int g_n = 1;
unsigned g_seq = 0;

uint64_t word_of(int r, unsigned seq) { return uint64_t(r + 1) * 1000 + seq; }
uint64_t sum_of(unsigned seq)
{
  uint64_t s = 0;
  for (int r = 0; r < g_n; ++r) s += word_of(r, seq);
  return s;
}

void add_words(const void* l, const void* r, void* d, size_t n)
{
  auto* a = static_cast<const uint64_t*>(l);
  auto* b = static_cast<const uint64_t*>(r);
  auto* o = static_cast<uint64_t*>(d);
  for (size_t i = 0; i < n; ++i) o[i] = a[i] + b[i];
}

lci::coll::shm_team_t* team()
{
  return static_cast<lci::coll::shm_team_t*>(
      lci::get_g_runtime().p_impl->coll_team.get());
}

// one blocking allreduce of 8 bytes, checked
void allreduce8(lci::matching_engine_t me = lci::matching_engine_t())
{
  const unsigned seq = ++g_seq;
  uint64_t in = word_of(mp::g_rank, seq), out = 0;
  lci::allreduce_x(&in, &out, 1, 8, &add_words).matching_engine(me)();
  CHECK(out == sum_of(seq), "allreduce %u: %llu, not %llu", seq,
        static_cast<unsigned long long>(out),
        static_cast<unsigned long long>(sum_of(seq)));
}

// every collective at 8 bytes (alltoall and reduce_scatter: 8 bytes a
// block up to 4 ranks) and a few smaller, blocking
void every_small()
{
  const int me = mp::g_rank;
  for (size_t size : {size_t(0), size_t(1), size_t(8)}) {
    for (int root = 0; root < g_n; ++root) {
      unsigned seq = ++g_seq;
      unsigned char b[8];
      std::memset(b, 0xee, sizeof b);
      if (me == root)
        for (size_t i = 0; i < size; ++i)
          b[i] = static_cast<unsigned char>(seq + i);
      lci::broadcast(b, size, root);
      for (size_t i = 0; i < size; ++i)
        CHECK(b[i] == static_cast<unsigned char>(seq + i),
              "broadcast %zu root %d byte %zu", size, root, i);
      for (size_t i = size; i < sizeof b; ++i)
        CHECK(b[i] == 0xee, "broadcast %zu: byte %zu past the buffer", size, i);
      seq = ++g_seq;
      uint64_t in = word_of(me, seq), out = 7;
      lci::reduce(&in, &out, size / 8, 8, &add_words, root);
      if (size == 8 && me == root)
        CHECK(out == sum_of(seq), "reduce root %d", root);
      else
        CHECK(out == 7, "reduce %zu root %d touched the output", size, root);
    }
  }
  lci::barrier();
  allreduce8();
  {
    const unsigned seq = ++g_seq;
    uint64_t in = word_of(me, seq);
    std::vector<uint64_t> out(static_cast<size_t>(g_n), 0);
    lci::allgather(&in, out.data(), 8);
    for (int r = 0; r < g_n; ++r)
      CHECK(out[static_cast<size_t>(r)] == word_of(r, seq), "allgather %d", r);
  }
  {
    const unsigned seq = ++g_seq;
    std::vector<uint64_t> in(static_cast<size_t>(g_n)), out(in.size(), 0);
    for (int r = 0; r < g_n; ++r)
      in[static_cast<size_t>(r)] =
          word_of(me, seq) * 100 + static_cast<unsigned>(r);
    lci::alltoall(in.data(), out.data(), 8);
    for (int r = 0; r < g_n; ++r)
      CHECK(out[static_cast<size_t>(r)] ==
                word_of(r, seq) * 100 + static_cast<unsigned>(me),
            "alltoall block %d", r);
    // in place
    lci::alltoall(in.data(), in.data(), 8);
    CHECK(in == out, "alltoall in place");
  }
  {
    const unsigned seq = ++g_seq;
    std::vector<uint64_t> in(static_cast<size_t>(g_n));
    for (int r = 0; r < g_n; ++r)
      in[static_cast<size_t>(r)] = word_of(me, seq) + static_cast<unsigned>(r);
    uint64_t out = 0;
    lci::reduce_scatter(in.data(), &out, 1, 8, &add_words);
    CHECK(out == sum_of(seq) + static_cast<unsigned>(g_n * me),
          "reduce_scatter");
  }
}

void late_joiner();

void test_path()
{
  lci::coll::shm_team_t* t = team();
  CHECK(t && !t->hierarchical(), "no flat node-local team");
  if (!t || t->hierarchical()) return;
  every_small();
  // allreduce and barrier need every rank, which keeps each rank's line
  // reuse known: every call takes the direct path
  const uint64_t before = t->small_runs();
  for (int k = 0; k < 50; ++k) {
    allreduce8();
    lci::barrier();
  }
  CHECK(t->small_runs() - before == 100,
        "%llu of 100 small collectives took the direct path",
        static_cast<unsigned long long>(t->small_runs() - before));
  // nonblocking collectives queued ahead of a blocking one: rank 0 comes
  // late, so the others' nonblocking ones cannot end at their start
  for (int k = 0; k < 20; ++k) {
    if (mp::g_rank == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(k < 3 ? 20 : 1));
    lci::comp_t sync = lci::alloc_sync_x().threshold(3)();
    unsigned seqs[3];
    uint64_t in[3], out[3] = {};
    for (int i = 0; i < 3; ++i) {
      seqs[i] = ++g_seq;
      in[i] = word_of(mp::g_rank, seqs[i]);
      lci::allreduce_x(&in[i], &out[i], 1, 8, &add_words).comp(sync)();
    }
    const bool queued = !lci::sync_test(sync, nullptr);
    const uint64_t runs = t->small_runs();
    allreduce8();
    if (queued)
      CHECK(t->small_runs() == runs,
            "a blocking collective took the direct path with nonblocking "
            "ones queued ahead of it");
    // (a successful sync_test reset the synchronizer)
    if (queued) lci::sync_wait(sync, nullptr);
    lci::free_comp(&sync);
    for (int i = 0; i < 3; ++i)
      CHECK(out[i] == sum_of(seqs[i]), "queued allreduce %d of round %d", i, k);
  }
  every_small();
  late_joiner();
}

// With more ranks than cores, a rank that waits in run_small for a peer
// that is not there yet gives its core away and looks again, for a bounded
// time, instead of handing over after its first look: a rank 0 that joins
// 100 us late is waited for there, on every other rank.
void late_joiner()
{
  lci::coll::shm_team_t* t = team();
  if (!t->oversubscribed()) {
    if (mp::g_rank == 0)
      std::printf("late joiner: not checked (a core per rank)\n");
    return;
  }
  lci::barrier();
  const uint64_t runs = t->small_runs();
  const uint64_t over = t->small_handovers();
  for (int k = 0; k < 20; ++k) {
    if (mp::g_rank == 0)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    lci::barrier();
  }
  CHECK(t->small_runs() - runs == 20,
        "%llu of 20 barriers took the direct path",
        static_cast<unsigned long long>(t->small_runs() - runs));
  // (a loaded machine may stall a rank past the bound now and then)
  if (mp::g_rank != 0)
    CHECK(t->small_handovers() - over <= 10,
          "%llu of 20 barriers joined late by rank 0 were handed over to "
          "the general path",
          static_cast<unsigned long long>(t->small_handovers() - over));
}

void test_threads()
{
  std::vector<lci::matching_engine_t> engines;
  for (int t = 0; t < 2; ++t) engines.push_back(lci::alloc_matching_engine());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([t, &engines, &failures] {
      try {
        for (int it = 0; it < 300; ++it) {
          const uint64_t seq = 5000000 + uint64_t(t) * 100000 + uint64_t(it);
          uint64_t in = uint64_t(mp::g_rank + 1) * seq, out = 0;
          uint64_t want = 0;
          for (int r = 0; r < g_n; ++r) want += uint64_t(r + 1) * seq;
          if (it % 2 == 0) {
            lci::allreduce_x(&in, &out, 1, 8, &add_words)
                .matching_engine(engines[static_cast<size_t>(t)])();
          } else {
            lci::comp_t sync = lci::alloc_sync();
            lci::allreduce_x(&in, &out, 1, 8, &add_words)
                .matching_engine(engines[static_cast<size_t>(t)])
                .comp(sync)();
            lci::sync_wait(sync, nullptr);
            lci::free_comp(&sync);
          }
          CHECK(out == want, "thread %d iteration %d", t, it);
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d thread %d: %s\n", mp::g_rank, t,
                     e.what());
        failures.fetch_add(1);
      }
    });
  for (int k = 0; k < 1000; ++k) {
    allreduce8();
    if (k % 3 == 0) lci::barrier();
    if (k % 5 == 0) {
      const unsigned seq = ++g_seq;
      uint64_t b = mp::g_rank == k % g_n ? seq : 0;
      lci::broadcast(&b, 8, k % g_n);
      CHECK(b == seq, "broadcast %d", k);
    }
  }
  for (auto& th : threads) th.join();
  CHECK(failures.load() == 0, "%d threads failed", failures.load());
  lci::barrier();
  for (auto& e : engines) lci::free_matching_engine(&e);
}

// f raises fatal_error whose message has every one of `needles`
template <typename F>
void expect_fatal(const char* what, F f, std::vector<std::string> needles)
{
  try {
    f();
    CHECK(false, "%s: no error", what);
  } catch (const lci::fatal_error& e) {
    for (const std::string& n : needles)
      CHECK(std::strstr(e.what(), n.c_str()) != nullptr,
            "%s: message '%s' lacks '%s'", what, e.what(), n.c_str());
  }
}

void test_mismatch(bool bcast)
{
  if (g_n < 2) return;
  allreduce8();
  lci::barrier();
  uint64_t buf[4] = {1, 2, 3, 4};
  const size_t mine = mp::g_rank == 1 ? 16 : 8;
  if (!bcast) {
    // every rank compares with every other: rank 1 names another rank
    // (8 bytes), the others name rank 1 (16 bytes)
    expect_fatal("allreduce of differing sizes",
                 [&] { lci::allreduce(buf, buf, mine / 8, 8, &add_words); },
                 {mp::g_rank == 1 ? "called allreduce with 8 bytes"
                                  : "rank 1 called allreduce with 16 bytes",
                  "same sizes"});
  } else if (mp::g_rank == 1) {
    expect_fatal("broadcast of differing sizes",
                 [&] { lci::broadcast(buf, mine, 0); },
                 {"rank 0 called broadcast with 8 bytes", "same sizes"});
  } else {
    // the root needs nobody; the other readers agree with it
    lci::broadcast(buf, mine, 0);
  }
  // a rank whose team stopped fails at once; the others name it (its stop
  // line), or fail at once too (their own team stopped)
  expect_fatal("barrier after the mismatch", [] { lci::barrier(); },
               {bcast && mp::g_rank != 1 ? "rank 1 stopped running collectives"
                                         : "lci::"});
}

}  // namespace

int main(int argc, char** argv)
{
  const std::string mode = argc > 1 ? argv[1] : "path";
  try {
    lci::g_runtime_init();
    mp::g_rank = lci::get_rank_me();
    g_n = lci::get_rank_n();
    if (mode == "path") {
      test_path();
    } else if (mode == "threads") {
      test_threads();
    } else if (mode == "mismatch" || mode == "mismatch-bcast") {
      test_mismatch(mode == "mismatch-bcast");
    } else {
      std::fprintf(stderr, "mp_coll_small: unknown mode %s\n", mode.c_str());
      return 2;
    }
    lci::g_runtime_fina();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", mp::g_rank, e.what());
    return 1;
  }
  const int rc = mp::exit_status();
  if (rc == 0)
    std::printf("mp_coll_small %s: rank %d of %d: ok\n", mode.c_str(),
                mp::g_rank, g_n);
  return rc;
}
