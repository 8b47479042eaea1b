// Collectives, blocking and nonblocking: every rank contributes a vector,
// a nonblocking allreduce sums it while the rank keeps working (here: it
// counts progress calls), then a blocking broadcast and a barrier. Prints
// one line per rank and exits 1 if a result is wrong.
//   lcrun -n 4 build/debug/examples/collectives
#include <cstdio>
#include <lci.hpp>
#include <vector>

namespace
{
void sum(const void* left, const void* right, void* dst, size_t n)
{
  auto* a = static_cast<const double*>(left);
  auto* b = static_cast<const double*>(right);
  auto* d = static_cast<double*>(dst);
  for (size_t i = 0; i < n; ++i) d[i] = a[i] + b[i];
}
}  // namespace

int main()
{
  lci::g_runtime_init();
  const int rank = lci::get_rank_me(), n = lci::get_rank_n();
  const size_t count = 100000;

  std::vector<double> mine(count), total(count);
  for (size_t i = 0; i < count; ++i) mine[i] = rank + 0.5 * i;

  // nonblocking: the synchronizer is signalled once the sum is everywhere
  lci::comp_t sync = lci::alloc_sync();
  lci::allreduce_x(mine.data(), total.data(), count, sizeof(double), &sum)
      .comp(sync)();
  long polls = 0;
  while (!lci::sync_test(sync, nullptr)) {
    lci::progress();  // ... or useful work, with progress now and then
    ++polls;
  }
  lci::free_comp(&sync);

  bool ok = true;
  for (size_t i = 0; i < count && ok; ++i)
    ok = total[i] == n * (n - 1) / 2.0 + n * 0.5 * i;

  // blocking: rank 0's value reaches everyone
  int answer = rank == 0 ? 42 : -1;
  lci::broadcast(&answer, sizeof(answer), /*root=*/0);
  ok = ok && answer == 42;
  lci::barrier();

  std::printf(
      "rank %d of %d: allreduce of %zu doubles %s after %ld polls, "
      "broadcast got %d\n",
      rank, n, count, ok ? "correct" : "WRONG", polls, answer);
  lci::g_runtime_fina();
  return ok ? 0 : 1;
}
