// LCI beside MPI in one program, as task runtimes use them: MPI for the
// application's own collectives, LCI for the runtime's messages. Either
// library may be initialized first and either finalized first
// (docs/LAUNCHING.md, "Using LCI with MPI"); every rank checks an
// MPI_Allreduce and an lci::allreduce, prints one line and exits 1 if a
// result is wrong. Build it with the compiler wrapper of the MPI whose
// launcher starts it:
//   mpiexec.hydra -n 3 build/debug/examples/with_mpi_mpich --init lci
//   mpirun -n 3 build/debug/examples/with_mpi_openmpi --fina mpi
// --init mpi|lci: which library starts first (default mpi);
// --fina mpi|lci: which library is finalized first (default lci).
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <lci.hpp>
#include <string>

namespace
{
void sum_long(const void* left, const void* right, void* dst, size_t n)
{
  auto* a = static_cast<const long*>(left);
  auto* b = static_cast<const long*>(right);
  auto* d = static_cast<long*>(dst);
  for (size_t i = 0; i < n; ++i) d[i] = a[i] + b[i];
}

void init_mpi()
{
  // MPI_THREAD_MULTIPLE, as a task runtime asks for; LCI needs no more
  // than the program's own use of MPI.
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
}

bool parse(int argc, char** argv, bool* mpi_init_first, bool* mpi_fina_first)
{
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return false;
    bool mpi = std::strcmp(argv[i + 1], "mpi") == 0;
    if (!mpi && std::strcmp(argv[i + 1], "lci") != 0) return false;
    if (std::strcmp(argv[i], "--init") == 0)
      *mpi_init_first = mpi;
    else if (std::strcmp(argv[i], "--fina") == 0)
      *mpi_fina_first = mpi;
    else
      return false;
  }
  return true;
}
}  // namespace

int main(int argc, char** argv)
{
  bool mpi_init_first = true, mpi_fina_first = false;
  if (!parse(argc, argv, &mpi_init_first, &mpi_fina_first)) {
    std::fprintf(stderr, "usage: %s [--init mpi|lci] [--fina mpi|lci]\n",
                 argv[0]);
    return 2;
  }
  if (mpi_init_first) {
    init_mpi();
    lci::g_runtime_init();
  } else {
    lci::g_runtime_init();
    init_mpi();
  }
  int mpi_rank = -1, mpi_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  const int rank = lci::get_rank_me(), n = lci::get_rank_n();
  const std::string bootstrap =
      lci::get_g_runtime().get_attr_bootstrap_backend();

  // both sum rank + 1 over every rank: n (n + 1) / 2
  long mine = rank + 1, mpi_sum = 0, lci_sum = 0;
  MPI_Allreduce(&mine, &mpi_sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  lci::allreduce(&mine, &lci_sum, 1, sizeof(long), &sum_long);
  const long expected = static_cast<long>(n) * (n + 1) / 2;
  const bool ok = rank == mpi_rank && n == mpi_size && mpi_sum == expected &&
                  lci_sum == expected;

  if (mpi_fina_first) {
    MPI_Finalize();
    lci::g_runtime_fina();
  } else {
    lci::g_runtime_fina();
    MPI_Finalize();
  }
  std::printf(
      "with_mpi: rank %d of %d (MPI rank %d of %d, bootstrap %s, %s first, "
      "%s finalized first): MPI sum %ld, LCI sum %ld: %s\n",
      rank, n, mpi_rank, mpi_size, bootstrap.c_str(),
      mpi_init_first ? "MPI" : "LCI", mpi_fina_first ? "MPI" : "LCI", mpi_sum,
      lci_sum, ok ? "ok" : "WRONG");
  std::fflush(stdout);
  return ok ? 0 : 1;
}
