// The MPI twin of benchmarks/coll.cpp: the same collectives and sizes with
// MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Reduce_scatter_block,
// MPI_Allgather and MPI_Alltoall on MPI_COMM_WORLD (the MPI library picks
// its algorithms: --algorithm accepts only "none").
#include <mpi.h>

#include <string>

#include "../common/coll_suite.hpp"
#include "mpi_world.hpp"

namespace
{

struct mpi_coll_t : mpi_world_t {
  void run(const std::string& coll, const std::string&, void* s, void* r,
           size_t size)
  {
    int count = static_cast<int>(size / 8);
    int bytes = static_cast<int>(size);
    if (coll == "barrier")
      MPI_Barrier(MPI_COMM_WORLD);
    else if (coll == "broadcast")
      MPI_Bcast(s, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (coll == "reduce")
      MPI_Reduce(s, r, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    else if (coll == "allreduce")
      MPI_Allreduce(s, r, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else if (coll == "reduce_scatter")
      MPI_Reduce_scatter_block(s, r, count, MPI_DOUBLE, MPI_SUM,
                               MPI_COMM_WORLD);
    else if (coll == "allgather")
      MPI_Allgather(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, MPI_COMM_WORLD);
    else
      MPI_Alltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, MPI_COMM_WORLD);
  }
};

}  // namespace

int main(int argc, char** argv)
{
  bench::coll_options_t o;
  bench::cli_t cli("mpi_coll",
                   "latency of MPI's collectives (microseconds per call)");
  bench::add_coll_options(cli, o, {"none"});
  cli.parse(argc, argv);
  MPI_Init(&argc, &argv);
  mpi_coll_t lib;
  int rc = bench::run_coll_suite(lib, o);
  MPI_Finalize();
  return rc;
}
