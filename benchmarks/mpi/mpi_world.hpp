// What every MPI twin of our benchmarks asks of MPI_COMM_WORLD: the
// library's name (for the CSV rows), this rank, the rank count, a barrier.
#ifndef LCI_BENCHMARKS_MPI_MPI_WORLD_HPP
#define LCI_BENCHMARKS_MPI_MPI_WORLD_HPP

#include <mpi.h>

struct mpi_world_t {
  static const char* library()
  {
#if defined(MPICH_VERSION)
    return "mpich";
#elif defined(OPEN_MPI)
    return "openmpi";
#else
    return "mpi";
#endif
  }
  int rank() const
  {
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }
  int nranks() const
  {
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }
  void barrier() { MPI_Barrier(MPI_COMM_WORLD); }
};

#endif  // LCI_BENCHMARKS_MPI_MPI_WORLD_HPP
