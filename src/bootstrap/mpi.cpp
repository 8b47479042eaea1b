// The "mpi" bootstrap backend, for programs that use MPI alongside LCI:
// rank and size of MPI_COMM_WORLD, MPI_Allgather and MPI_Barrier on a
// duplicate of it (with MPI_ERRORS_RETURN, so failures become errors that
// name the call).
//
// LCI does not need to be built with MPI for this: the program's MPI is
// found in the process by name (dlsym(RTLD_DEFAULT, "MPI_...")), so one LCI
// serves programs built with MPICH and with Open MPI. The functions' C
// signatures are the same in both, but their handles are not: MPICH and the
// implementations that share its ABI (Intel MPI, MVAPICH, Cray MPICH) use
// int handles with fixed values, Open MPI pointers to its predefined
// objects. MPI_Get_library_version (callable before MPI_Init) names the
// implementation; an MPI that is neither is refused with an error naming it.
//
// If the program has not called MPI_Init, the backend calls
// MPI_Init_thread(MPI_THREAD_SERIALIZED) itself and MPI_Finalize when it is
// destroyed (at process exit): that needs an MPI in the process, which a
// build with -DLCI_WITH_MPI=ON (LCI_HAVE_MPI) links. If the program
// initialized MPI, the program finalizes it, before or after LCI.
#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends.hpp"

#ifdef LCI_HAVE_MPI
#include <mpi.h>
#endif

namespace lci::bootstrap
{
namespace
{

[[noreturn]] void fail(const std::string& what)
{
  throw std::runtime_error("lci bootstrap (mpi): " + what);
}

// The symbol `name` of the MPI in this process, or null.
template <typename F>
F lookup(const char* name)
{
  void* p = dlsym(RTLD_DEFAULT, name);
  F f = nullptr;
  static_assert(sizeof(f) == sizeof(p), "function and data pointers differ");
  std::memcpy(&f, &p, sizeof(f));
  return f;
}

template <typename F>
F require(const char* name)
{
  F f = lookup<F>(name);
  if (f == nullptr) {
    fail(std::string("the MPI in this process has no ") + name +
         " (not an MPI library?)");
  }
  return f;
}

using flag_fn = int (*)(int*);

// The handle ABI of an implementation: H is int (MPICH's) or void*
// (Open MPI's); MPI_Comm, MPI_Datatype and MPI_Errhandler are all H.
template <typename H>
struct abi_t {
  H comm_world{};
  H byte{};
  H errors_return{};
  void* in_place = nullptr;
  int (*comm_dup)(H, H*) = nullptr;
  int (*comm_free)(H*) = nullptr;
  int (*comm_rank)(H, int*) = nullptr;
  int (*comm_size)(H, int*) = nullptr;
  int (*comm_set_errhandler)(H, H) = nullptr;
  int (*allgather)(const void*, int, H, void*, int, H, H) = nullptr;
  int (*barrier)(H) = nullptr;

  void bind()
  {
    comm_dup = require<decltype(comm_dup)>("MPI_Comm_dup");
    comm_free = require<decltype(comm_free)>("MPI_Comm_free");
    comm_rank = require<decltype(comm_rank)>("MPI_Comm_rank");
    comm_size = require<decltype(comm_size)>("MPI_Comm_size");
    comm_set_errhandler =
        require<decltype(comm_set_errhandler)>("MPI_Comm_set_errhandler");
    allgather = require<decltype(allgather)>("MPI_Allgather");
    barrier = require<decltype(barrier)>("MPI_Barrier");
  }
};

// MPICH's mpi.h (the same in every implementation of its ABI).
abi_t<int> mpich_abi()
{
  abi_t<int> abi;
  abi.comm_world = 0x44000000;
  abi.byte = 0x4c00010d;
  abi.errors_return = 0x54000001;
  abi.in_place = reinterpret_cast<void*>(static_cast<intptr_t>(-1));
  abi.bind();
  return abi;
}

// Open MPI's mpi.h: a predefined handle is the address of a global object.
abi_t<void*> openmpi_abi()
{
  abi_t<void*> abi;
  abi.comm_world = require<void*>("ompi_mpi_comm_world");
  abi.byte = require<void*>("ompi_mpi_byte");
  abi.errors_return = require<void*>("ompi_mpi_errors_return");
  abi.in_place = reinterpret_cast<void*>(static_cast<intptr_t>(1));
  abi.bind();
  return abi;
}

std::string library_version()
{
  auto get = lookup<int (*)(char*, int*)>("MPI_Get_library_version");
  if (get == nullptr) return "";
  // larger than any implementation's MPI_MAX_LIBRARY_VERSION_STRING
  std::vector<char> text(16384, '\0');
  int len = 0;
  if (get(text.data(), &len) != 0) return "";
  std::string s(text.data(), std::min<std::size_t>(
                                 static_cast<std::size_t>(len), text.size()));
  std::size_t end = s.find('\n');
  if (end != std::string::npos) s.resize(end);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

enum class family_t { mpich, openmpi, unknown };

family_t family_of(const std::string& version)
{
  if (version.find("Open MPI") != std::string::npos) return family_t::openmpi;
  for (const char* name : {"MPICH", "Intel(R) MPI", "MVAPICH"}) {
    if (version.find(name) != std::string::npos) return family_t::mpich;
  }
  return family_t::unknown;
}

std::string error_text(int rc)
{
  auto text_of = lookup<int (*)(int, char*, int*)>("MPI_Error_string");
  std::vector<char> text(16384, '\0');
  int len = 0;
  if (text_of == nullptr || text_of(rc, text.data(), &len) != 0) {
    return "MPI error " + std::to_string(rc);
  }
  return std::string(
      text.data(),
      std::min<std::size_t>(static_cast<std::size_t>(len), text.size()));
}

bool mpi_flag(const char* name)
{
  flag_fn f = lookup<flag_fn>(name);
  int flag = 0;
  return f != nullptr && f(&flag) == 0 && flag != 0;
}

template <typename H>
class mpi_backend_t final : public backend_t
{
 public:
  mpi_backend_t(abi_t<H> abi, bool own_init) : abi_(abi), own_init_(own_init)
  {
    check(abi_.comm_dup(abi_.comm_world, &comm_), "MPI_Comm_dup");
    have_comm_ = true;
    check(abi_.comm_set_errhandler(comm_, abi_.errors_return),
          "MPI_Comm_set_errhandler");
    check(abi_.comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(abi_.comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~mpi_backend_t() override
  {
    // The program may have finalized MPI already (before or after
    // g_runtime_fina()).
    if (mpi_flag("MPI_Finalized")) return;
    if (have_comm_) abi_.comm_free(&comm_);
    if (own_init_) {
      auto finalize = lookup<int (*)()>("MPI_Finalize");
      if (finalize != nullptr) finalize();
    }
  }
  mpi_backend_t(const mpi_backend_t&) = delete;
  mpi_backend_t& operator=(const mpi_backend_t&) = delete;

  const char* name() const override { return "mpi"; }
  int rank_me() const override { return rank_; }
  int rank_n() const override { return size_; }
  bool usable() const override { return !mpi_flag("MPI_Finalized"); }

  void allgather(const void* in, void* out, std::size_t size) override
  {
    check_live("MPI_Allgather");
    if (size > static_cast<std::size_t>(INT_MAX)) {
      fail("allgather of " + std::to_string(size) + " bytes exceeds INT_MAX");
    }
    int n = static_cast<int>(size);
    auto* dest = static_cast<char*>(out);
    if (in == dest + static_cast<std::size_t>(rank_) * size) {
      check(
          abi_.allgather(abi_.in_place, 0, abi_.byte, out, n, abi_.byte, comm_),
          "MPI_Allgather");
      return;
    }
    // `in` may still overlap `out` elsewhere: send from a copy.
    std::vector<char> mine(static_cast<const char*>(in),
                           static_cast<const char*>(in) + size);
    check(abi_.allgather(mine.data(), n, abi_.byte, out, n, abi_.byte, comm_),
          "MPI_Allgather");
  }

  void barrier() override
  {
    check_live("MPI_Barrier");
    check(abi_.barrier(comm_), "MPI_Barrier");
  }

 private:
  void check(int rc, const char* call) const
  {
    if (rc != 0) fail(std::string(call) + " failed: " + error_text(rc));
  }
  void check_live(const char* call) const
  {
    if (!usable()) {
      fail(std::string(call) +
           ": the program finalized MPI, and LCI bootstraps through it: "
           "allocate LCI runtimes and devices before MPI_Finalize()");
    }
  }

  abi_t<H> abi_;
  bool own_init_;
  H comm_{};
  bool have_comm_ = false;
  int rank_ = -1;
  int size_ = 0;
};

// The MPI family this LCI was compiled against, or unknown without MPI.
family_t built_family()
{
#if defined(LCI_HAVE_MPI) && defined(OPEN_MPI)
  return family_t::openmpi;
#elif defined(LCI_HAVE_MPI) && defined(MPICH_VERSION)
  return family_t::mpich;
#else
  return family_t::unknown;
#endif
}

}  // namespace

bool mpi_supported()
{
#ifdef LCI_HAVE_MPI
  return true;
#else
  return false;
#endif
}

mpi_state_t mpi_state()
{
  if (lookup<flag_fn>("MPI_Initialized") == nullptr) return mpi_state_t::absent;
  if (mpi_flag("MPI_Finalized")) return mpi_state_t::finalized;
  if (mpi_flag("MPI_Initialized")) return mpi_state_t::live;
  return mpi_state_t::not_initialized;
}

bool mpi_initialized_by_program() { return mpi_state() == mpi_state_t::live; }

std::unique_ptr<backend_t> make_mpi_backend()
{
  mpi_state_t state = mpi_state();
  if (state == mpi_state_t::absent) {
    fail(
        "this LCI was built without MPI support and there is no MPI in "
        "this process: LCI bootstraps through the program's MPI once the "
        "program has initialized it, or initializes MPI itself when built "
        "with -DLCI_WITH_MPI=ON");
  }
  if (state == mpi_state_t::finalized) {
    fail("MPI is already finalized; LCI cannot bootstrap through it");
  }
  std::string version = library_version();
  family_t family = family_of(version);
  std::string shown =
      version.empty() ? "(no MPI_Get_library_version)" : "'" + version + "'";
  if (family == family_t::unknown) {
    fail("the MPI in this process, " + shown +
         ", is neither of the MPICH ABI (MPICH, Intel MPI, MVAPICH) nor "
         "Open MPI: LCI does not know its handles; start LCI before MPI or "
         "without MPI");
  }
  if (built_family() != family_t::unknown && built_family() != family) {
    fail("this LCI was built with " +
         std::string(built_family() == family_t::mpich ? "MPICH" : "Open MPI") +
         " (-DLCI_WITH_MPI=ON) but the program's MPI is " + shown +
         ": two MPI libraries in one process do not work; build LCI with "
         "the program's MPI, or without LCI_WITH_MPI");
  }
  bool own_init = false;
  if (state == mpi_state_t::not_initialized) {
    if (!mpi_supported()) {
      fail(
          "the program has not initialized MPI, and this LCI was built "
          "without -DLCI_WITH_MPI=ON, so it does not initialize MPI itself "
          "(call MPI_Init before LCI)");
    }
    auto init = require<int (*)(int*, char***, int, int*)>("MPI_Init_thread");
    // MPI_THREAD_SERIALIZED is 2 in both ABIs
    int provided = 0;
    int rc = init(nullptr, nullptr, 2, &provided);
    if (rc != 0) fail("MPI_Init_thread failed: " + error_text(rc));
    own_init = true;
  }
  if (family == family_t::mpich) {
    return std::make_unique<mpi_backend_t<int>>(mpich_abi(), own_init);
  }
  return std::make_unique<mpi_backend_t<void*>>(openmpi_abi(), own_init);
}

std::string mpi_library_version() { return library_version(); }

#ifdef LCI_HAVE_MPI
// Keeps liblci linked to the MPI it was built with (an as-needed linker
// drops a library nothing refers to), so that the backend finds MPI_Init
// in programs that do not use MPI themselves.
extern "C" int (*const lci_bootstrap_mpi_init_ref)(int*, char***, int,
                                                   int*) = &MPI_Init_thread;
#endif

}  // namespace lci::bootstrap
