// Message rate (paper Figures 2 and 3): 8-byte (by default) ping-pong
// between pairs, messages delivered per second job-wide, one CSV row per
// size with the median, min and max of the runs. The engine, the pairing
// and the patterns are in common/suite.hpp (shared with the MPI twin in
// mpi/); our transport is lci_transport.hpp.
//
//   lcrun -n 2 ./lci_msgrate                    2 processes x 1 thread
//   lcrun -n 2 ./lci_msgrate --window 64        windowed message rate
//   ./lci_msgrate --threads 2                   1 process x 2 threads, a
//                                               device each, each thread
//                                               playing against itself
//   ./lci_msgrate --threads 2 --shared-device   ... one device for both
//   ./lci_msgrate --threads 2 --pairs           thread 0 against thread 1
//   lcrun -n 2 ./lci_msgrate --self             process twin of --threads 2
//   lcrun -n 2 ./lci_msgrate --op am            active messages
//   lcrun -n 2 ./lci_msgrate --busy-owner 100   "inattentive owner" case
//
// --busy-owner US: each rank has a communicating thread and an owner thread
// that sleeps US microseconds between progress calls on its device; the
// devices are crossed so every message lands on the device of the peer's
// busy owner. Run it with LCI_ATTR_ATTENTIVE_PROGRESS=0 and =1 to see what
// attentive progress changes.
#include "lci_transport.hpp"

int main(int argc, char** argv)
{
  bench::options_t o = bench::default_options(bench::kind_t::msgrate);
  long busy_owner_us = -1;
  bench::cli_t cli("lci_msgrate",
                   "Message rate of ping-pong between pairs of threads or "
                   "processes (msgs/s, job-wide).\nRun several ranks with "
                   "lcrun -n N; one rank plays through loopback.");
  bench::add_common_options(cli, o, "--shared-device",
                            bench::lci_transport_t::op_names());
  cli.add("--busy-owner", &busy_owner_us,
          "microseconds an owner thread sleeps between progress calls on "
          "the device every message lands on (2 ranks x 1 thread; < 0: off)");
  cli.parse(argc, argv);
  bench::lci_transport_t tr;
  if (busy_owner_us >= 0) {
    if (tr.nranks() != 2 || o.threads != 1 || o.self) {
      if (tr.rank() == 0)
        std::fprintf(stderr,
                     "lci_msgrate: --busy-owner needs 2 ranks x 1 "
                     "thread\n");
      return 2;
    }
    tr.set_busy_owner(busy_owner_us);
  }
  return bench::run_suite(tr, o);
}
