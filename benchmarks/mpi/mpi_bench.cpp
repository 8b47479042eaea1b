// The MPI twin of lci_msgrate, lci_bandwidth and lci_latency: the same
// options, pairs, patterns and CSV rows (../common/suite.hpp), over MPI
// (mpi_transport.hpp). Built once per benchmark and MPI library, e.g.
// mpi_msgrate_mpich, mpi_bandwidth_openmpi; LCI_BENCH_KIND selects the
// benchmark at compile time.
//
//   mpiexec.hydra -n 2 ./mpi_msgrate_mpich
//   mpirun.openmpi -n 2 ./mpi_msgrate_openmpi --window 64
//   mpiexec.hydra -n 1 ./mpi_msgrate_mpich --threads 2          comm per thread
//   mpiexec.hydra -n 1 ./mpi_msgrate_mpich --threads 2 --shared-comm
#include "mpi_transport.hpp"

#ifndef LCI_BENCH_KIND
#error "define LCI_BENCH_KIND as msgrate, bandwidth or latency"
#endif

int main(int argc, char** argv)
{
  using bench::kind_t;
  const kind_t kind = kind_t::LCI_BENCH_KIND;
  bench::options_t o = bench::default_options(kind);
  std::string prog = std::string("mpi_") + bench::kind_name(kind) + "_" +
                     bench::mpi_transport_t::library();
  const char* about =
      kind == kind_t::msgrate
          ? "MPI twin of lci_msgrate: message rate of ping-pong between "
            "pairs (msgs/s, job-wide)."
      : kind == kind_t::bandwidth
          ? "MPI twin of lci_bandwidth: a window of messages between pairs "
            "(payload MB/s, job-wide)."
          : "MPI twin of lci_latency: half round-trip latency of ping-pong "
            "(us).";
  bench::cli_t cli(prog, std::string(about) +
                             "\nThreads use one duplicated communicator each "
                             "(hints mpi_assert_no_any_tag,\n"
                             "mpi_assert_allow_overtaking) unless "
                             "--shared-comm; 1 thread per rank uses "
                             "MPI_COMM_WORLD.");
  bench::add_common_options(cli, o, "--shared-comm",
                            bench::mpi_transport_t::op_names());
  cli.parse(argc, argv);
  bench::mpi_transport_t tr(&argc, &argv, o);
  return bench::run_suite(tr, o);
}
