// The "mpi" bootstrap backend, for programs that use MPI alongside LCI:
// rank and size of MPI_COMM_WORLD, MPI_Allgather and MPI_Barrier on a
// duplicate of it (with MPI_ERRORS_RETURN, so failures become errors that
// name the call). Built only with -DLCI_WITH_MPI=ON (LCI_HAVE_MPI).
//
// If the program has not called MPI_Init, the backend calls
// MPI_Init_thread(MPI_THREAD_SERIALIZED) itself and MPI_Finalize when it is
// destroyed (at process exit). If the program initialized MPI, the program
// finalizes it, after g_runtime_fina().
#include "backends.hpp"

#ifdef LCI_HAVE_MPI

#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace lci::bootstrap
{
namespace
{

[[noreturn]] void fail(const std::string& what)
{
  throw std::runtime_error("lci bootstrap (mpi): " + what);
}

std::string error_text(int rc)
{
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) {
    return "MPI error " + std::to_string(rc);
  }
  return std::string(text, static_cast<std::size_t>(len));
}

bool mpi_finalized()
{
  int flag = 0;
  MPI_Finalized(&flag);
  return flag != 0;
}

class mpi_backend_t final : public backend_t
{
 public:
  mpi_backend_t();
  ~mpi_backend_t() override;
  mpi_backend_t(const mpi_backend_t&) = delete;
  mpi_backend_t& operator=(const mpi_backend_t&) = delete;

  const char* name() const override { return "mpi"; }
  int rank_me() const override { return rank_; }
  int rank_n() const override { return size_; }
  void allgather(const void* in, void* out, std::size_t size) override;
  void barrier() override;

 private:
  void check(int rc, const char* call) const;
  void check_live(const char* call) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  bool own_init_ = false;
  int rank_ = -1;
  int size_ = 0;
};

mpi_backend_t::mpi_backend_t()
{
  if (mpi_finalized()) {
    fail("MPI is already finalized; LCI cannot bootstrap through it");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    int rc =
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) fail("MPI_Init_thread failed: " + error_text(rc));
    own_init_ = true;
  }
  check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
  check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN),
        "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

mpi_backend_t::~mpi_backend_t()
{
  // The program may have finalized MPI already (after g_runtime_fina()).
  if (mpi_finalized()) return;
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (own_init_) MPI_Finalize();
}

void mpi_backend_t::check(int rc, const char* call) const
{
  if (rc != MPI_SUCCESS) fail(std::string(call) + " failed: " + error_text(rc));
}

void mpi_backend_t::check_live(const char* call) const
{
  if (mpi_finalized()) {
    fail(std::string(call) +
         ": MPI was finalized while LCI still needs it (call "
         "g_runtime_fina() / free_runtime() before MPI_Finalize())");
  }
}

void mpi_backend_t::allgather(const void* in, void* out, std::size_t size)
{
  check_live("MPI_Allgather");
  if (size > static_cast<std::size_t>(INT_MAX)) {
    fail("allgather of " + std::to_string(size) + " bytes exceeds INT_MAX");
  }
  auto* dest = static_cast<char*>(out);
  const char* mine_slot = dest + static_cast<std::size_t>(rank_) * size;
  if (in == mine_slot) {
    check(MPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, out, static_cast<int>(size),
                        MPI_BYTE, comm_),
          "MPI_Allgather");
    return;
  }
  // `in` may still overlap `out` elsewhere: send from a copy.
  std::vector<char> mine(static_cast<const char*>(in),
                         static_cast<const char*>(in) + size);
  check(MPI_Allgather(mine.data(), static_cast<int>(size), MPI_BYTE, out,
                      static_cast<int>(size), MPI_BYTE, comm_),
        "MPI_Allgather");
}

void mpi_backend_t::barrier()
{
  check_live("MPI_Barrier");
  check(MPI_Barrier(comm_), "MPI_Barrier");
}

}  // namespace

bool mpi_supported() { return true; }

bool mpi_initialized_by_program()
{
  int initialized = 0;
  MPI_Initialized(&initialized);
  return initialized != 0 && !mpi_finalized();
}

std::unique_ptr<backend_t> make_mpi_backend()
{
  return std::make_unique<mpi_backend_t>();
}

}  // namespace lci::bootstrap

#else  // !LCI_HAVE_MPI

#include <stdexcept>

namespace lci::bootstrap
{

bool mpi_supported() { return false; }

bool mpi_initialized_by_program() { return false; }

std::unique_ptr<backend_t> make_mpi_backend()
{
  throw std::runtime_error(
      "lci bootstrap (mpi): this LCI was built without MPI support "
      "(reconfigure with -DLCI_WITH_MPI=ON)");
}

}  // namespace lci::bootstrap

#endif  // LCI_HAVE_MPI
