// Point-to-point all-to-all with LCI (benchmarks/common/alltoall_suite.hpp;
// the MPI twin is benchmarks/mpi/mpi_alltoall.cpp; benchmarks/oversub.py
// runs both from 2 to 32 ranks on 2 cores). Run under lcrun:
//   LCI_ATTR_BACKEND=shm lcrun -n 32 build/release/benchmarks/lci_alltoall
//
// --wait sync (default): every send and receive signals one synchronizer
// (allow_done(false); sends that find a full ring queue in the backlog,
// allow_retry(false)) and the rank waits in sync_wait: the library's own
// wait. --wait progress: a counter, and the program's own loop calling
// lci::progress() (and retrying refused sends) until it is complete.
#include <lci.hpp>
#include <string>
#include <vector>

#include "common/alltoall_suite.hpp"

namespace
{

struct lci_a2a_t {
  bool sync_mode = true;
  lci::comp_t sync, counter;
  int sync_threshold = 0;
  std::vector<lci::status_t> statuses;

  const char* library() const { return "lci"; }
  int rank() const { return lci::get_rank_me(); }
  int nranks() const { return lci::get_rank_n(); }
  void barrier() { lci::barrier(); }

  void exchange(int k, size_t size, int parity, char* out, char* in)
  {
    const int me = rank(), n = nranks();
    const int nops = 2 * k * (n - 1);
    if (sync_mode && sync_threshold != nops) {
      if (!sync.is_empty()) lci::free_comp(&sync);
      sync = lci::alloc_sync_x().threshold(nops)();
      sync_threshold = nops;
      statuses.resize(static_cast<size_t>(nops));
    }
    if (!sync_mode && counter.is_empty()) counter = lci::alloc_counter();
    int64_t expected = 0;
    // receives first, from the next rank on (spreads the senders)
    for (int d = 1; d < n; ++d) {
      int p = (me + d) % n;
      for (int j = 0; j < k; ++j) {
        char* buf = in + (static_cast<size_t>(p) * k + j) * size;
        lci::tag_t tag = static_cast<lci::tag_t>(parity * k + j);
        if (sync_mode) {
          lci::post_recv_x(p, buf, size, tag, sync).allow_done(false)();
        } else if (lci::post_recv(p, buf, size, tag, counter).is_posted()) {
          ++expected;
        }
      }
    }
    for (int d = 1; d < n; ++d) {
      int p = (me + d) % n;
      for (int j = 0; j < k; ++j) {
        char* buf = out + (static_cast<size_t>(p) * k + j) * size;
        lci::tag_t tag = static_cast<lci::tag_t>(parity * k + j);
        if (sync_mode) {
          lci::post_send_x(p, buf, size, tag, sync)
              .allow_done(false)
              .allow_retry(false)();
          continue;
        }
        for (;;) {
          lci::status_t s = lci::post_send(p, buf, size, tag, counter);
          if (s.is_posted()) ++expected;
          if (!s.is_retry()) break;
          lci::progress();
        }
      }
    }
    if (sync_mode) {
      lci::sync_wait(sync, statuses.data());
      return;
    }
    while (lci::counter_get(counter) < expected) lci::progress();
    lci::counter_set(counter, 0);
  }
};

}  // namespace

int main(int argc, char** argv)
{
  bench::alltoall_options_t o;
  std::string wait = "sync";
  bench::cli_t cli("lci_alltoall",
                   "point-to-point all-to-all: time per message of the whole "
                   "job (ns); run under lcrun");
  bench::add_alltoall_options(cli, o);
  cli.add("--wait", &wait,
          "sync: the library's sync_wait; progress: the program's own "
          "lci::progress() loop",
          {"sync", "progress"});
  cli.parse(argc, argv);
  try {
    lci::g_runtime_init();
    int rc;
    {
      lci_a2a_t lib;
      lib.sync_mode = wait == "sync";
      rc = bench::run_alltoall_suite(lib, o, wait);
      if (!lib.sync.is_empty()) lci::free_comp(&lib.sync);
      if (!lib.counter.is_empty()) lci::free_comp(&lib.counter);
    }
    lci::g_runtime_fina();
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lci_alltoall: %s\n", e.what());
    return 1;
  }
}
