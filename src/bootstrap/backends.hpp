// Internal: constructors of the concrete bootstrap backends, used by
// get_backend() (bootstrap.cpp) and by the protocol tests. Not part of the
// public interface. Each throws std::runtime_error ("lci bootstrap (NAME):
// ...") when the environment is unusable or the process manager answers
// with an error.
#ifndef LCI_BOOTSTRAP_BACKENDS_HPP
#define LCI_BOOTSTRAP_BACKENDS_HPP

#include <memory>
#include <string>

#include "bootstrap.hpp"

namespace lci::bootstrap
{

class pmi_conn_t;

// Singleton: rank 0 of 1.
std::unique_ptr<backend_t> make_local_backend();

// PMI-1 wire-protocol client (pmi1.cpp). Connects as the environment says
// unless given a connection; `init_done`: the "cmd=init" exchange already
// happened on it (version negotiation).
std::unique_ptr<backend_t> make_pmi1_backend(
    std::unique_ptr<pmi_conn_t> conn = nullptr, bool init_done = false);

// PMI-2 wire-protocol client (pmi2.cpp); same arguments.
std::unique_ptr<backend_t> make_pmi2_backend(
    std::unique_ptr<pmi_conn_t> conn = nullptr, bool init_done = false);

// PMI_FD mode without a forced version: offers PMI-2 in "cmd=init" and
// continues with whichever version the process manager accepts (hydra and
// Slurm answer 2, lcrun answers 1).
std::unique_ptr<backend_t> make_pmi_negotiated_backend();

// PMIx client through libpmix (pmix.cpp). Without PMIx support in this
// build it throws, saying so.
bool pmix_supported();
std::unique_ptr<backend_t> make_pmix_backend();

// MPI (mpi.cpp): MPI_Allgather on a duplicate of MPI_COMM_WORLD, through
// the MPI found in the process (MPICH's ABI or Open MPI's). Calls
// MPI_Init_thread itself when the program has not, if built with MPI
// (LCI_HAVE_MPI), and MPI_Finalize at the end; otherwise the program must
// have initialized MPI. Throws naming what is missing.
bool mpi_supported();
// The MPI of this process, found by name (dlsym), with or without LCI_HAVE_MPI.
enum class mpi_state_t { absent, not_initialized, live, finalized };
mpi_state_t mpi_state();
// True when the program has initialized MPI and not finalized it.
bool mpi_initialized_by_program();
// The first line of MPI_Get_library_version, or "" without MPI.
std::string mpi_library_version();
std::unique_ptr<backend_t> make_mpi_backend();

// Wraps a PMI-1/PMI-2 client on the launcher's inherited PMI_FD, which an
// MPI in the process uses too (shared_fd.cpp): once the program has
// initialized MPI, requests go through MPI instead, and the wrapper never
// finalizes the connection (MPI does, and closes it).
std::unique_ptr<backend_t> guard_shared_pmi_fd(std::unique_ptr<backend_t> pmi);

// Ranks started with RANK, WORLD_SIZE and a rendezvous address (upstream
// LCI 2's tcp bootstrap, torchrun): rank 0 listens there (tcp.cpp).
struct tcp_endpoint_t {
  const char* addr_name;
  const char* port_name;
  const char* addr;
  const char* port;
};
// The first complete pair of LCT_MASTER_*, LCI_MASTER_*, MASTER_*.
bool find_tcp_endpoint(tcp_endpoint_t* ep);
extern const char* const kTcpEndpointHelp;
std::unique_ptr<backend_t> make_tcp_backend();

// Creates a new backend by name ("auto" applies the detection order of
// get_backend()), without caching it. Throws for unknown names.
std::unique_ptr<backend_t> create_backend(const std::string& name);

}  // namespace lci::bootstrap

#endif  // LCI_BOOTSTRAP_BACKENDS_HPP
