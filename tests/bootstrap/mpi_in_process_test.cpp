// mpi_in_process_test: the bootstrap's handling of an MPI in the process
// (src/bootstrap/mpi.cpp, shared_fd.cpp), against a fake MPI defined here
// and exported from this executable, so that dlsym(RTLD_DEFAULT) finds it
// as it would find a real one:
// - an MPI of an ABI LCI does not know is refused, quoting its version;
// - a finalized MPI is refused;
// - a PMI client on PMI_FD, wrapped for sharing, goes on with PMI while MPI
//   is not initialized, refuses (and gives up its finalize) after
//   MPI_Finalize, and reports itself unusable then;
// - under Slurm's PMI-2 (PMI_JOBID, SLURM_MPI_TYPE=pmi2) "auto" refuses an
//   MPI that is present but not initialized;
// - a PMI request on a PMI_FD whose number now names another file fails
//   without writing to that file.
// Exits 0 when every case behaves as expected.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "bootstrap/backends.hpp"
#include "bootstrap/pmi_conn.hpp"

// --- the fake MPI ---------------------------------------------------------
namespace
{
int g_initialized = 0;
int g_finalized = 0;
const char* g_version = "FooMPI 1.0 (an ABI nobody knows)";
}  // namespace

extern "C" {
int MPI_Initialized(int* flag)
{
  *flag = g_initialized;
  return 0;
}
int MPI_Finalized(int* flag)
{
  *flag = g_finalized;
  return 0;
}
int MPI_Get_library_version(char* text, int* len)
{
  std::snprintf(text, 256, "%s", g_version);
  *len = static_cast<int>(std::strlen(text));
  return 0;
}
}

namespace
{
namespace bs = lci::bootstrap;

int g_failures = 0;

void check(bool ok, const std::string& what)
{
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
  if (!ok) ++g_failures;
}

// Runs `f`; true if it throws a message containing `needle`.
template <typename F>
bool throws_with(F&& f, const std::string& needle)
{
  try {
    f();
  } catch (const std::exception& e) {
    bool found = std::string(e.what()).find(needle) != std::string::npos;
    if (!found) std::printf("  (message: %s)\n", e.what());
    return found;
  }
  std::printf("  (no exception)\n");
  return false;
}

// A stand-in for a PMI client: counts what reaches it.
class fake_pmi_t final : public bs::backend_t
{
 public:
  const char* name() const override { return "pmi2"; }
  int rank_me() const override { return 0; }
  int rank_n() const override { return 1; }
  void allgather(const void* in, void* out, std::size_t size) override
  {
    std::memmove(out, in, size);
    ++calls;
  }
  void barrier() override { ++calls; }
  void forgo_finalize() override { forgone = true; }
  int calls = 0;
  bool forgone = false;
};

void unknown_abi_refused()
{
  g_initialized = 1;
  g_finalized = 0;
  check(bs::mpi_state() == bs::mpi_state_t::live, "fake MPI found live");
  check(throws_with([] { bs::create_backend("auto"); },
                    "'FooMPI 1.0 (an ABI nobody knows)', is neither"),
        "auto with an unknown MPI ABI: refused, quoting its version");
}

void finalized_refused()
{
  g_initialized = 1;
  g_finalized = 1;
  check(throws_with([] { bs::make_mpi_backend(); }, "already finalized"),
        "mpi backend after MPI_Finalize: refused");
}

void shared_fd_guard()
{
  g_initialized = 0;
  g_finalized = 0;
  auto owned = std::make_unique<fake_pmi_t>();
  fake_pmi_t* pmi = owned.get();
  auto guard = bs::guard_shared_pmi_fd(std::move(owned));
  int in = 7, out = 0;
  guard->allgather(&in, &out, sizeof(in));
  guard->barrier();
  check(pmi->calls == 2 && out == 7 && guard->usable() && !pmi->forgone,
        "MPI not initialized: requests go to PMI");
  g_initialized = 1;
  g_finalized = 1;
  check(!guard->usable(), "after MPI_Finalize: not usable");
  check(throws_with([&] { guard->barrier(); },
                    "MPI_Finalize has closed the process manager connection"),
        "after MPI_Finalize: a request is refused, saying why");
  check(pmi->calls == 2 && pmi->forgone,
        "after MPI_Finalize: nothing reached PMI, its finalize given up");
  guard.reset();
}

void slurm_pmi2_refused()
{
  g_initialized = 0;
  g_finalized = 0;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    check(false, "socketpair");
    return;
  }
  setenv("PMI_FD", std::to_string(sv[0]).c_str(), 1);
  setenv("PMI_RANK", "0", 1);
  setenv("PMI_SIZE", "1", 1);
  setenv("PMI_JOBID", "1.0", 1);
  setenv("SLURM_MPI_TYPE", "pmi2", 1);
  if (bs::mpi_supported()) {
    std::printf("skip: built with MPI, the Slurm check does not apply\n");
  } else {
    check(throws_with([] { bs::create_backend("auto"); },
                      "under srun --mpi=pmi2 MPI cannot start after LCI"),
          "srun --mpi=pmi2 with an MPI not initialized yet: refused");
    char buf[16];
    ssize_t n = recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT);
    check(n < 0, "... before anything was sent to the process manager");
  }
  unsetenv("PMI_JOBID");
  unsetenv("SLURM_MPI_TYPE");
  close(sv[0]);
  close(sv[1]);
}

void reused_fd_not_written()
{
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    check(false, "socketpair");
    return;
  }
  setenv("PMI_FD", std::to_string(sv[0]).c_str(), 1);
  bs::pmi_conn_t conn("pmi2");
  // another client closes the connection, and the number goes to a file
  char path[] = "/tmp/lci-mpi-in-process-XXXXXX";
  int file = mkstemp(path);
  if (file < 0 || dup2(file, sv[0]) != sv[0]) {
    check(false, "mkstemp/dup2");
    return;
  }
  close(file);
  check(throws_with([&] { conn.send_v2("cmd=kvs-fence;"); },
                    "is no longer the connection to the process manager"),
        "PMI_FD reused by a file: the request fails");
  struct stat st {
  };
  check(stat(path, &st) == 0 && st.st_size == 0,
        "... and nothing was written to that file");
  unlink(path);
  close(sv[0]);
  close(sv[1]);
  unsetenv("PMI_FD");
}

}  // namespace

int main()
{
  unknown_abi_refused();
  finalized_refused();
  shared_fd_guard();
  slurm_pmi2_refused();
  reused_fd_not_written();
  std::printf("%d failure(s)\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
