// Peer discovery: who am I, how many are we, and a way to exchange small
// blobs (network addresses) with every other rank.
//
// Thread safety: single-thread. The runtime calls these only from its
// allocation and free paths (alloc_runtime, alloc_device, ...), which are
// collective and not concurrent with each other.
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
  // same number of times in the same order.
  virtual void allgather(const void* in, void* out, std::size_t size) = 0;
  virtual void barrier() = 0;
};

// The process-wide bootstrap backend, chosen from the environment on first
// use: "pmi1" when PMI_FD (or PMI_PORT), PMI_RANK and PMI_SIZE are set (lcrun,
// MPICH hydra), otherwise "local" (a singleton: rank 0 of 1). The
// attribute LCI_ATTR_BOOTSTRAP_BACKEND (env) may force one of those names.
// The backend lives while any shared_ptr to it lives; the last release
// finalizes it (PMI finalize). Thread-safe.
std::shared_ptr<backend_t> get_backend();

}  // namespace lci::bootstrap

#endif  // LCI_BOOTSTRAP_BOOTSTRAP_HPP
