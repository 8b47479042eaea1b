// get_backend(): picks the process-wide bootstrap backend from the
// environment (see bootstrap.hpp for the order) and keeps it until exit.
#include "bootstrap.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends.hpp"
#include "pmi_conn.hpp"
#include "pmi_wire.hpp"

namespace lci::bootstrap
{

const char* const kBackendNames[7] = {"auto", "local", "pmi1", "pmi2",
                                      "pmix", "mpi",   "tcp"};

namespace
{

const char* const kForceHint =
    "set LCI_ATTR_BOOTSTRAP_BACKEND (or the runtime attribute "
    "bootstrap_backend) to one of local, pmi1, pmi2, pmix, mpi, tcp to "
    "force a backend";

// Variables that tell which launcher started us, shown in errors.
const char* const kLauncherVars[] = {"PMI_FD",
                                     "PMI_PORT",
                                     "PMI_ID",
                                     "PMI_RANK",
                                     "PMI_SIZE",
                                     "PMIX_NAMESPACE",
                                     "PMIX_RANK",
                                     "PMIX_SERVER_URI41",
                                     "PMIX_SERVER_URI4",
                                     "PMIX_SERVER_URI3",
                                     "PMIX_SERVER_URI2",
                                     "OMPI_COMM_WORLD_RANK",
                                     "OMPI_COMM_WORLD_SIZE",
                                     "SLURM_PROCID",
                                     "SLURM_STEP_NUM_TASKS",
                                     "LCT_PMI_BACKEND",
                                     "LCT_PMI_FILE_NRANKS",
                                     "RANK",
                                     "WORLD_SIZE",
                                     "LCT_MASTER_ADDR",
                                     "LCT_MASTER_PORT",
                                     "LCI_MASTER_ADDR",
                                     "LCI_MASTER_PORT",
                                     "MASTER_ADDR",
                                     "MASTER_PORT"};

const char* env(const char* name)
{
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? value : nullptr;
}

// An integer environment variable, or -1 when unset or not a number.
long long env_count(const char* name)
{
  const char* text = env(name);
  long long value = -1;
  if (text == nullptr || !pmi_wire::parse_int(text, &value)) return -1;
  return value;
}

[[noreturn]] void inconsistent(const std::string& what)
{
  throw std::runtime_error(
      "lci bootstrap: inconsistent launcher environment: " + what +
      " [found: " + launcher_environment() + "]; start the program with " +
      "its launcher's PMI support (e.g. srun --mpi=pmi2 or --mpi=pmix), or " +
      kForceHint);
}

// The backend "auto" stands for here, or "pmi" (PMI_FD: negotiate the
// version). Throws on partial or contradictory variables.
std::string detect()
{
  if (mpi_initialized_by_program()) return "mpi";

  bool pmix_rank = env("PMIX_RANK") != nullptr;
  bool pmix_ns = env("PMIX_NAMESPACE") != nullptr;
  if (pmix_rank && pmix_ns) return "pmix";
  if (pmix_rank != pmix_ns) {
    inconsistent(std::string(pmix_rank ? "PMIX_RANK" : "PMIX_NAMESPACE") +
                 " is set but " + (pmix_rank ? "PMIX_NAMESPACE" : "PMIX_RANK") +
                 " is not");
  }

  bool fd = env("PMI_FD") != nullptr;
  bool port = env("PMI_PORT") != nullptr;
  bool rank = env("PMI_RANK") != nullptr;
  bool size = env("PMI_SIZE") != nullptr;
  bool id = env("PMI_ID") != nullptr;
  if (fd) {
    if (!rank || !size) {
      inconsistent(std::string("PMI_FD is set but ") +
                   (!rank ? "PMI_RANK" : "PMI_SIZE") + " is not");
    }
    return "pmi";
  }
  if (port) {
    if (!id && !(rank && size)) {
      inconsistent(
          "PMI_PORT is set but neither PMI_ID nor PMI_RANK and "
          "PMI_SIZE are");
    }
    return "pmi1";
  }
  if (rank || size || id) {
    inconsistent(std::string(rank   ? "PMI_RANK"
                             : size ? "PMI_SIZE"
                                    : "PMI_ID") +
                 " is set but neither PMI_FD nor PMI_PORT is (no way to "
                 "reach the process manager)");
  }

  // Launchers we recognize but cannot use without PMI variables.
  long long ompi_size = env_count("OMPI_COMM_WORLD_SIZE");
  if (ompi_size > 1) {
    inconsistent("Open MPI started " + std::to_string(ompi_size) +
                 " ranks (OMPI_COMM_WORLD_SIZE) but no PMIx variables "
                 "(PMIX_RANK, PMIX_NAMESPACE) are set");
  }
  long long slurm_tasks = env_count("SLURM_STEP_NUM_TASKS");
  if (slurm_tasks > 1 && env("SLURM_PROCID") != nullptr) {
    inconsistent("srun started " + std::to_string(slurm_tasks) +
                 " tasks (SLURM_STEP_NUM_TASKS) without a PMI (srun "
                 "--mpi=none?)");
  }
  // Upstream LCI 2's launch variables. LCT_PMI_BACKEND lists its
  // bootstraps in the order to try; its tcp bootstrap (RANK, WORLD_SIZE and
  // a rendezvous address, which torchrun sets too) is the tcp backend here.
  // Its file bootstrap (what its lcrun script uses: ranks numbered by
  // arrival through files under $HOME) is not implemented: running each
  // process as a rank 0 of 1 would be N separate jobs, so it is refused.
  tcp_endpoint_t ep;
  bool tcp_ready = env("RANK") != nullptr && env("WORLD_SIZE") != nullptr &&
                   find_tcp_endpoint(&ep);
  if (const char* lct = env("LCT_PMI_BACKEND")) {
    std::string list = lct;
    std::vector<std::string> words;
    for (size_t b = 0; b < list.size();) {
      size_t e = list.find_first_of(" ;,", b);
      if (e == std::string::npos) e = list.size();
      if (e > b) words.push_back(list.substr(b, e - b));
      b = e + 1;
    }
    for (const std::string& w : words) {
      if (w == "local") return "local";
      if (w == "tcp") {
        if (tcp_ready) return "tcp";
        if (words.size() == 1)
          inconsistent(std::string("LCT_PMI_BACKEND=tcp but no usable "
                                   "rendezvous: ") +
                       kTcpEndpointHelp);
      } else if (w == "file") {
        if (env_count("LCT_PMI_FILE_NRANKS") > 1 ||
            env_count("SLURM_NTASKS") > 1)
          inconsistent(std::string("LCT_PMI_BACKEND=") + lct +
                       " asks for upstream LCI's file bootstrap (its lcrun "
                       "script), which this LCI does not implement: start "
                       "the program with this package's lcrun (lcrun -n N "
                       "prog), a PMI launcher, or upstream's tcp variables");
      } else if (w != "pmi1" && w != "pmi2" && w != "pmix" && w != "mpi") {
        // upstream's PMI names: those launchers were looked for above
        inconsistent("Unknown env LCT_PMI_BACKEND entry '" + w + "' in '" +
                     lct +
                     "' (upstream's names: local, file, tcp, pmi1, pmi2, "
                     "pmix, mpi)");
      }
    }
  }
  if (tcp_ready) return "tcp";
  long long world = env_count("WORLD_SIZE");
  if (world > 1) {
    inconsistent("WORLD_SIZE=" + std::to_string(world) +
                 " (torchrun's or upstream LCI's tcp bootstrap variables) "
                 "without a rendezvous address or a PMI (" +
                 kTcpEndpointHelp +
                 "; or start the program with this package's lcrun)");
  }
  return "local";
}

// PMI_FD without a forced version: offer PMI-2, fall back to PMI-1.
// PMI_PORT mode always uses PMI-1 (its "cmd=initack" comes before init).
std::unique_ptr<backend_t> negotiate_pmi()
{
  auto conn = std::make_unique<pmi_conn_t>("pmi");
  if (conn->port_mode()) return make_pmi1_backend(std::move(conn), false);
  std::string request = "cmd=init pmi_version=2 pmi_subversion=0";
  conn->send_line(request);
  std::string line = conn->read_line(request);
  pmi_wire::message_t reply = pmi_wire::parse(line);
  if (pmi_wire::get(reply, "cmd") != "response_to_init") {
    conn->fail("unexpected reply '" + line + "' to '" + request + "'");
  }
  std::string rc = pmi_wire::get(reply, "rc", "0");
  std::string version = pmi_wire::get(reply, "pmi_version");
  if (rc == "0" && version == "2") {
    return make_pmi2_backend(std::move(conn), true);
  }
  if (rc == "0" && (version == "1" || version.empty())) {
    // The server accepted the init as PMI-1 (lcrun does).
    return make_pmi1_backend(std::move(conn), true);
  }
  if (rc != "0") {
    // PMI-2 refused: start over with a PMI-1 init on the same connection.
    return make_pmi1_backend(std::move(conn), false);
  }
  conn->fail("'" + request + "' answered '" + line +
             "' (neither PMI-1 nor PMI-2)");
}

// Slurm's PMI-2 server (srun --mpi=pmi2; it sets PMI_JOBID and
// SLURM_MPI_TYPE, hydra sets neither) accepts one "init" per task
// connection, so an MPI initialized after LCI could not start: MPICH's
// MPI_Init then fails ("invalid pmi1 command received: 'init'") or hangs.
// An MPI in the process that is not initialized yet most likely will be:
// refuse now, saying what works. (An LCI built with MPI links one itself,
// so there its presence says nothing about the program.)
void refuse_mpi_after_slurm_pmi2()
{
  const char* type = env("SLURM_MPI_TYPE");
  if (env("PMI_FD") == nullptr || env("PMI_JOBID") == nullptr ||
      type == nullptr || std::strncmp(type, "pmi2", 4) != 0 ||
      mpi_supported() || mpi_state() != mpi_state_t::not_initialized)
    return;
  throw std::runtime_error(
      "lci bootstrap: this program contains an MPI that it has not "
      "initialized yet, and under srun --mpi=pmi2 MPI cannot start after "
      "LCI (Slurm's PMI-2 server takes one client per task, and LCI would "
      "be it): call MPI_Init before LCI's g_runtime_init, or run with srun "
      "--mpi=pmix; if the program never initializes MPI, set "
      "LCI_ATTR_BOOTSTRAP_BACKEND=pmi2");
}

bool known_name(const std::string& name)
{
  for (const char* known : kBackendNames) {
    if (name == known) return true;
  }
  return false;
}

std::string known_list()
{
  std::string list;
  for (const char* known : kBackendNames) {
    list += (list.empty() ? "" : ", ") + std::string(known);
  }
  return list;
}

// Holds the backend until exit; `any` also finds it while runtimes still
// hold it after the exit handler dropped `holder`.
struct state_t {
  std::mutex mutex;
  std::shared_ptr<backend_t> holder;
  std::weak_ptr<backend_t> any;
  bool exit_handler = false;
  bool exiting = false;
};

state_t& state()
{
  // Never destroyed, so that calls from static destructors at exit still
  // find a live mutex.
  static state_t* s = new state_t;
  return *s;
}

void release_at_exit()
{
  std::shared_ptr<backend_t> last;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    state().exiting = true;
    last = std::move(state().holder);
  }
  // `last` goes out of scope outside the lock: if no runtime holds the
  // backend any more, this finalizes it.
}

}  // namespace

std::string describe_detection()
{
  std::string choice;
  try {
    choice = detect();
  } catch (const std::exception& e) {
    return std::string("none: ") + e.what();
  }
  if (choice == "mpi") return "mpi: the program initialized MPI";
  if (choice == "pmix") return "pmix: PMIX_RANK and PMIX_NAMESPACE are set";
  if (choice == "pmi")
    return "pmi2 or pmi1: PMI_FD is set (PMI-2 if the process manager "
           "accepts it, else PMI-1)";
  if (choice == "pmi1") return "pmi1: PMI_PORT is set (PMI-1 port mode)";
  if (choice == "tcp")
    return "tcp: RANK, WORLD_SIZE and a rendezvous address are set";
  return "local: no launcher variables (rank 0 of 1)";
}

std::string launcher_environment()
{
  std::string out;
  for (const char* name : kLauncherVars) {
    const char* value = env(name);
    if (value == nullptr) continue;
    std::string shown = value;
    if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
    out += (out.empty() ? "" : " ") + std::string(name) + "=" + shown;
  }
  return out.empty() ? "none" : out;
}

std::unique_ptr<backend_t> create_backend(const std::string& name)
{
  if (!known_name(name)) {
    throw std::runtime_error("lci bootstrap: unknown backend '" + name +
                             "' (known: " + known_list() + ")");
  }
  std::string choice = name == "auto" ? detect() : name;
  if (name == "auto" && choice == "pmi") refuse_mpi_after_slurm_pmi2();
  try {
    if (choice == "local") return make_local_backend();
    if (choice == "pmix") return make_pmix_backend();
    if (choice == "mpi") return make_mpi_backend();
    if (choice == "tcp") return make_tcp_backend();
    std::unique_ptr<backend_t> pmi = choice == "pmi"    ? negotiate_pmi()
                                     : choice == "pmi1" ? make_pmi1_backend()
                                                        : make_pmi2_backend();
    // the launcher's one connection (not one we opened to PMI_PORT), which
    // an MPI initialized later in this process will use as well
    if (env("PMI_FD") != nullptr) return guard_shared_pmi_fd(std::move(pmi));
    return pmi;
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + " [" +
                             (name == "auto" ? "detected" : "forced") +
                             " backend '" + choice + "'; launcher variables: " +
                             launcher_environment() + "; " + kForceHint + "]");
  }
}

void release_shared_pmix()
{
  std::shared_ptr<backend_t> last;
  {
    state_t& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.holder || std::string(s.holder->name()) != "pmix" ||
        mpi_state() == mpi_state_t::absent)
      return;
    last = std::move(s.holder);
  }
  // released outside the lock: without a runtime left, this finalizes it
}

std::shared_ptr<backend_t> get_backend(const std::string& requested)
{
  if (!known_name(requested)) {
    throw std::runtime_error("lci bootstrap: unknown backend '" + requested +
                             "' (known: " + known_list() + ")");
  }
  state_t& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (std::shared_ptr<backend_t> backend = s.any.lock()) {
    if (requested != "auto" && requested != backend->name()) {
      throw std::runtime_error("lci bootstrap: backend '" + requested +
                               "' requested, but this process already uses '" +
                               backend->name() +
                               "' (one bootstrap backend per process)");
    }
    return backend;
  }
  if (s.exiting) {
    throw std::runtime_error(
        "lci bootstrap: the process is exiting and its bootstrap backend is "
        "finalized; cannot create a runtime now");
  }
  std::shared_ptr<backend_t> backend(create_backend(requested));
  s.holder = backend;
  s.any = backend;
  if (!s.exit_handler) {
    std::atexit(release_at_exit);
    s.exit_handler = true;
  }
  return backend;
}

}  // namespace lci::bootstrap
