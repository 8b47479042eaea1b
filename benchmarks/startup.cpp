// startup: how long a rank takes to join a job. Each rank prints one line
//   startup: rank R of N bootstrap B launch_to_init_us X init_us Y
//            device_us Z
// where, in microseconds of CLOCK_REALTIME (one clock for every process of
// this machine):
//   launch_to_init: from $LCI_BENCH_T0_NS (set by the script just before it
//                   starts the launcher) to the end of g_runtime_init;
//   init:           g_runtime_init alone, from entering main() (bootstrap,
//                   network context, default device: one address
//                   allgather and a barrier);
//   device:         one more alloc_device after init (an endpoint, one
//                   address allgather, one barrier): the part of init
//                   that grows with the number of ranks.
// benchmarks/startup_scale.py runs it under lcrun, mpiexec.hydra and mpirun.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <lci.hpp>
#include <string>

namespace
{

long long now_ns()
{
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

}  // namespace

int main()
{
  long long t_main = now_ns();
  const char* t0_text = std::getenv("LCI_BENCH_T0_NS");
  long long t0 = t0_text ? std::atoll(t0_text) : t_main;
  lci::g_runtime_init();
  long long t_init = now_ns();
  lci::device_t device = lci::alloc_device();
  long long t_device = now_ns();
  lci::free_device(&device);
  std::string backend = lci::get_g_runtime().get_attr_bootstrap_backend();
  std::printf(
      "startup: rank %d of %d bootstrap %s launch_to_init_us %lld init_us "
      "%lld device_us %lld\n",
      lci::get_rank_me(), lci::get_rank_n(), backend.c_str(),
      (t_init - t0) / 1000, (t_init - t_main) / 1000,
      (t_device - t_init) / 1000);
  std::fflush(stdout);
  lci::g_runtime_fina();
  return 0;
}
