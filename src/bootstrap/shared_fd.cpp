// The PMI connection a launcher hands each process in PMI_FD (hydra, srun
// --mpi=pmi2, lcrun) is the only one that process gets: an MPI initialized
// in the same process after LCI speaks PMI over the same descriptor, and
// MPI_Finalize sends its own "finalize", then closes it (MPICH does). Two
// clients cannot share one connection safely: their requests may
// interleave, and the one that finalizes second writes to a closed
// descriptor, or to whatever file has been given its number since.
//
// So once the program has initialized MPI, this wrapper leaves the
// connection to MPI: bootstrap requests go through MPI (the "mpi" backend,
// same ranks) while it is live, fail with an explanation after
// MPI_Finalize, and the PMI client is destroyed without a "finalize" of its
// own (MPI's finalize ends the process's PMI session; the launchers count
// one per process). When MPI is initialized first, get_backend() picks the
// "mpi" backend from the start and no PMI client exists.
#include <memory>
#include <stdexcept>
#include <string>

#include "backends.hpp"

namespace lci::bootstrap
{
namespace
{

class shared_fd_backend_t final : public backend_t
{
 public:
  explicit shared_fd_backend_t(std::unique_ptr<backend_t> pmi)
      : pmi_(std::move(pmi))
  {
  }
  ~shared_fd_backend_t() override
  {
    mpi_.reset();
    if (mpi_state() != mpi_state_t::not_initialized &&
        mpi_state() != mpi_state_t::absent)
      pmi_->forgo_finalize();
  }
  shared_fd_backend_t(const shared_fd_backend_t&) = delete;
  shared_fd_backend_t& operator=(const shared_fd_backend_t&) = delete;

  const char* name() const override { return pmi_->name(); }
  int rank_me() const override { return pmi_->rank_me(); }
  int rank_n() const override { return pmi_->rank_n(); }
  void set_timeout(unsigned seconds) override { pmi_->set_timeout(seconds); }
  bool usable() const override
  {
    return mpi_state() != mpi_state_t::finalized && pmi_->usable();
  }
  void allgather(const void* in, void* out, std::size_t size) override
  {
    current("allgather")->allgather(in, out, size);
  }
  void barrier() override { current("barrier")->barrier(); }

 private:
  backend_t* current(const char* what);

  std::unique_ptr<backend_t> pmi_;
  std::unique_ptr<backend_t> mpi_;
};

backend_t* shared_fd_backend_t::current(const char* what)
{
  mpi_state_t state = mpi_state();
  if (state == mpi_state_t::absent || state == mpi_state_t::not_initialized)
    return pmi_.get();
  pmi_->forgo_finalize();
  std::string who = std::string("lci bootstrap (") + pmi_->name() + "): ";
  if (state == mpi_state_t::finalized) {
    throw std::runtime_error(
        who + what +
        ": the program initialized MPI after LCI, and MPI_Finalize has "
        "closed the process manager connection (PMI_FD) they shared; "
        "allocate LCI runtimes and devices before MPI_Finalize(), or "
        "initialize MPI before LCI");
  }
  if (!mpi_) {
    try {
      mpi_ = make_mpi_backend();
    } catch (const std::exception& e) {
      throw std::runtime_error(
          who + what +
          ": the program initialized MPI after LCI, which now uses the "
          "process manager connection (PMI_FD); LCI goes on through MPI, "
          "but: " +
          e.what());
    }
    if (mpi_->rank_me() != pmi_->rank_me() ||
        mpi_->rank_n() != pmi_->rank_n()) {
      std::string mine = std::to_string(pmi_->rank_me()) + " of " +
                         std::to_string(pmi_->rank_n());
      std::string theirs = std::to_string(mpi_->rank_me()) + " of " +
                           std::to_string(mpi_->rank_n());
      mpi_.reset();
      throw std::runtime_error(who + what + ": LCI is rank " + mine +
                               " but MPI_COMM_WORLD says " + theirs);
    }
  }
  return mpi_.get();
}

}  // namespace

std::unique_ptr<backend_t> guard_shared_pmi_fd(std::unique_ptr<backend_t> pmi)
{
  return std::make_unique<shared_fd_backend_t>(std::move(pmi));
}

}  // namespace lci::bootstrap
