// Latency per protocol: ping-pong of one message at a time, the one-way
// time (half a round trip; a thread playing against itself: a whole trip
// through loopback) in microseconds per size, with the protocol the size
// takes (inject, eager, rendezvous) in the last column. Sizes the library
// refuses (above the eager limit while rendezvous is missing) are skipped
// with its message. The engine is common/suite.hpp (shared with the MPI
// twin), our transport lci_transport.hpp.
//
//   lcrun -n 2 ./lci_latency                    2 processes, default sizes
//   lcrun -n 2 ./lci_latency --sizes 8 --op am  8-byte active messages
//   ./lci_latency                               one rank, through loopback
#include "lci_transport.hpp"

int main(int argc, char** argv)
{
  bench::options_t o = bench::default_options(bench::kind_t::latency);
  bench::cli_t cli("lci_latency",
                   "Half round-trip latency of ping-pong per size and "
                   "protocol (us).\nRun 2 ranks with lcrun -n 2; one rank "
                   "plays through loopback.");
  bench::add_common_options(cli, o, "--shared-device",
                            bench::lci_transport_t::op_names());
  cli.parse(argc, argv);
  bench::lci_transport_t tr;
  return bench::run_suite(tr, o);
}
