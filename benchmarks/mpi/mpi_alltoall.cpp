// The MPI twin of benchmarks/alltoall.cpp: the same point-to-point
// all-to-all (benchmarks/common/alltoall_suite.hpp) with MPI_Irecv,
// MPI_Isend and one MPI_Waitall per round on MPI_COMM_WORLD.
#include <mpi.h>

#include <string>
#include <vector>

#include "../common/alltoall_suite.hpp"
#include "mpi_world.hpp"

namespace
{

struct mpi_a2a_t : mpi_world_t {
  std::vector<MPI_Request> reqs;

  void exchange(int k, size_t size, int parity, char* out, char* in)
  {
    const int me = rank(), n = nranks();
    reqs.clear();
    const int bytes = static_cast<int>(size);
    for (int d = 1; d < n; ++d) {
      int p = (me + d) % n;
      for (int j = 0; j < k; ++j) {
        reqs.emplace_back();
        MPI_Irecv(in + (static_cast<size_t>(p) * k + j) * size, bytes, MPI_BYTE,
                  p, parity * k + j, MPI_COMM_WORLD, &reqs.back());
      }
    }
    for (int d = 1; d < n; ++d) {
      int p = (me + d) % n;
      for (int j = 0; j < k; ++j) {
        reqs.emplace_back();
        MPI_Isend(out + (static_cast<size_t>(p) * k + j) * size, bytes,
                  MPI_BYTE, p, parity * k + j, MPI_COMM_WORLD, &reqs.back());
      }
    }
    MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(),
                MPI_STATUSES_IGNORE);
  }
};

}  // namespace

int main(int argc, char** argv)
{
  bench::alltoall_options_t o;
  bench::cli_t cli("mpi_alltoall",
                   "point-to-point all-to-all with MPI: time per message of "
                   "the whole job (ns)");
  bench::add_alltoall_options(cli, o);
  cli.parse(argc, argv);
  MPI_Init(&argc, &argv);
  int rc;
  {
    mpi_a2a_t lib;
    rc = bench::run_alltoall_suite(lib, o, "waitall");
  }
  MPI_Finalize();
  return rc;
}
