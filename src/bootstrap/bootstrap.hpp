// Peer discovery: who am I, how many are we, and a way to exchange small
// blobs (network addresses) with every other rank.
//
// Thread safety: get_backend() is thread-safe. A backend's operations are
// single-thread: the runtime calls them only from its allocation and free
// paths (alloc_runtime, alloc_device, ...), which are collective and
// serialized per runtime.
#ifndef LCI_BOOTSTRAP_BOOTSTRAP_HPP
#define LCI_BOOTSTRAP_BOOTSTRAP_HPP

#include <cstddef>
#include <memory>
#include <string>

namespace lci::bootstrap
{

class backend_t
{
 public:
  virtual ~backend_t() = default;
  virtual const char* name() const = 0;
  virtual int rank_me() const = 0;
  virtual int rank_n() const = 0;
  // Every rank contributes `size` bytes from `in`; `out` receives
  // rank_n() * size bytes ordered by rank. Collective: all ranks call it the
  // same number of times in the same order. `in` may alias part of `out`.
  virtual void allgather(const void* in, void* out, std::size_t size) = 0;
  virtual void barrier() = 0;
  // Bounds every wait on the process manager (a fence, a reply) to
  // `seconds`; 0 waits forever. A wait that times out throws, naming the
  // request. Backends that cannot bound their waits (local, mpi) ignore it.
  // Thread-safe.
  virtual void set_timeout(unsigned seconds) { (void)seconds; }
  // False once the process manager may no longer be used: the program
  // finalized the MPI that this backend goes through, or that closed the
  // PMI connection it shared with LCI. free_device then synchronizes over
  // the network instead. Allocations still throw, saying why.
  virtual bool usable() const { return true; }
  // The connection to the process manager now belongs to another client in
  // this process (MPI): destroy the backend without finalizing it, and
  // never write to it again.
  virtual void forgo_finalize() {}
};

// The names get_backend() accepts: "auto" and the backends.
extern const char* const kBackendNames[7];  // auto local pmi1 pmi2 pmix mpi tcp

// The process-wide bootstrap backend. The first call creates it:
// `requested` names a backend, or "auto" applies the detection order
// (docs/LAUNCHING.md):
//   1. mpi    the program already called MPI_Init (MPICH's ABI or Open
//             MPI's, found in the process; LCI need not be built with MPI)
//   2. pmix   PMIX_RANK and PMIX_NAMESPACE are set (Open MPI's mpirun,
//             srun --mpi=pmix, prterun)
//   3. pmi2 / pmi1   PMI_FD (+ PMI_RANK, PMI_SIZE) is set: PMI-2 if the
//             process manager accepts it in "cmd=init", else PMI-1 (hydra,
//             srun --mpi=pmi2, lcrun); PMI_PORT (+ PMI_ID): PMI-1
//   4. tcp    RANK, WORLD_SIZE and a rendezvous address (LCT_MASTER_*,
//             LCI_MASTER_* or MASTER_*): upstream LCI 2's tcp bootstrap,
//             torchrun; LCT_PMI_BACKEND (upstream's list) is honoured
//   5. local  no launcher variables at all (rank 0 of 1)
// Partial or contradictory launcher variables (e.g. PMI_RANK without
// PMI_FD/PMI_PORT, OMPI_COMM_WORLD_SIZE=4 without PMIx variables) are an
// error naming them, never a silent singleton.
//
// The backend lives until process exit (atexit), or until the last
// shared_ptr to it is released after that; destroying it finalizes the
// process manager connection. Later calls return the same backend; a
// request naming a different backend is an error. Errors throw
// std::runtime_error whose message names the backend, the variables found
// and how to force a backend.
std::shared_ptr<backend_t> get_backend(const std::string& requested = "auto");

// Called when a runtime has been freed. An MPI in this process that uses
// PMIx shares the PMIx client library with the pmix backend, and libpmix
// counts its inits and finalizes: keeping our reference until exit would
// make MPI_Finalize's finalize not the last one, leaving libpmix running
// (its thread calling into MPI's PMIx component) after MPI has shut that
// component down. So with an MPI present the pmix backend lives only as
// long as the runtimes that use it, and a later runtime makes a new one.
void release_shared_pmix();

// What get_backend("auto") would choose in this process and why, without
// creating it: "pmix: PMIX_RANK and PMIX_NAMESPACE are set", or the error
// it would throw. For diagnostics (lci_info).
std::string describe_detection();

// The launcher variables of this process, "NAME=value ..." (for error
// messages); "none" when there are none.
std::string launcher_environment();

}  // namespace lci::bootstrap

#endif  // LCI_BOOTSTRAP_BOOTSTRAP_HPP
