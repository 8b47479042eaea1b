// Bandwidth (paper Figure 4): a window of messages in flight from the
// initiator of each pair to its responder, which acknowledges every window
// with 8 bytes; payload MB/s job-wide per size. Sizes above the eager limit
// need the rendezvous protocol and are skipped, with the library's message,
// while it is missing. The engine is common/suite.hpp (shared with the MPI
// twin), our transport lci_transport.hpp.
//
//   lcrun -n 2 ./lci_bandwidth                      16 B .. 16 MiB, window 64
//   lcrun -n 2 ./lci_bandwidth --op am --sizes 1K   active messages
//   ./lci_bandwidth --memcpy                        single-core memcpy rows
#include <chrono>
#include <cstring>

#include "lci_transport.hpp"

namespace
{

// Single-core memcpy of the same sizes and window: the copy a transfer
// through shared memory cannot beat. Rows with library "memcpy".
void memcpy_rows(const bench::options_t& o)
{
  size_t max_size = 0;
  for (size_t s : o.sizes) max_size = std::max(max_size, s);
  std::vector<char> src(max_size, 's'), dst(max_size, 'd');
  if (o.pin) bench::pin_self(0);
  bench::print_header();
  for (size_t size : o.sizes) {
    const long iters = bench::scaled_iters(o.iters, size);
    const long warmup = bench::scaled_iters(o.warmup, size);
    std::vector<double> mbs;
    for (int run = -1; run < o.runs; ++run) {
      long n = run < 0 ? warmup : iters;
      auto t0 = std::chrono::steady_clock::now();
      for (long i = 0; i < n * o.window; ++i) {
        std::memcpy(dst.data(), src.data(), size);
        asm volatile("" : : "r"(dst.data()) : "memory");  // keep the copy
      }
      double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
      if (run >= 0) mbs.push_back(size * o.window * n / secs / 1e6);
    }
    std::sort(mbs.begin(), mbs.end());
    std::printf(
        "bandwidth,memcpy,single-core,1,1,%zu,%ld,%.1f,%.1f,%.1f,MB/s,memcpy,"
        "%ld,-\n",
        size, iters, bench::median_of_sorted(mbs), mbs.front(), mbs.back(),
        o.window);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv)
{
  bench::options_t o = bench::default_options(bench::kind_t::bandwidth);
  bool memcpy_only = false;
  bench::cli_t cli("lci_bandwidth",
                   "Bandwidth of a window of messages between pairs of "
                   "threads or processes (payload MB/s, job-wide).\nRun "
                   "several ranks with lcrun -n N; one rank plays through "
                   "loopback.");
  bench::add_common_options(cli, o, "--shared-device",
                            bench::lci_transport_t::op_names());
  cli.flag("--memcpy", &memcpy_only,
           "measure single-core memcpy of the same sizes instead (no LCI)");
  cli.parse(argc, argv);
  if (memcpy_only) {
    std::string err = bench::check_topology(o, 1);
    if (!err.empty()) {
      std::fprintf(stderr, "lci_bandwidth: %s\n", err.c_str());
      return 2;
    }
    memcpy_rows(o);
    return 0;
  }
  bench::lci_transport_t tr;
  return bench::run_suite(tr, o);
}
