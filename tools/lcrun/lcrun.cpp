// lcrun: starts N ranks of a program as one job and serves them the PMI-1
// wire protocol (pmi_server.hpp) so that LCI's PMI bootstrap can exchange
// addresses. It watches the ranks: the first failure (non-zero exit, death
// by a signal, PMI abort, a barrier that can no longer complete) or the
// timeout terminates the others. It only ever signals the process groups of
// the ranks it started, by id. With --label it forwards each rank's stdout
// and stderr line by line, prefixed with "[rank] ". It creates no files.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/pmi_wire.hpp"
#include "pmi_server.hpp"

namespace
{

using clock_type = std::chrono::steady_clock;

constexpr int kExitUsage = 2;
constexpr int kExitTimeout = 124;
constexpr int kMaxRanks = 100000;
constexpr auto kKillGrace = std::chrono::seconds(2);

const char kUsage[] =
    "Usage: lcrun [-n N] [--timeout SECONDS] [options] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Starts N ranks (default 1) of PROGRAM as one job and serves them the\n"
    "PMI-1 protocol over a private socket pair per rank: each rank gets\n"
    "PMI_FD, PMI_RANK, PMI_SIZE and PMI_SPAWNED=0, and lcrun's environment.\n"
    "Only rank 0 gets stdin. lcrun creates no files.\n"
    "\n"
    "Options:\n"
    "  -n, -np N           number of ranks (N >= 1)\n"
    "  --timeout SECONDS   kill the job after SECONDS and exit 124; 0 means\n"
    "                      no limit (default: $LCRUN_TIMEOUT, else none)\n"
    "  -x, --env NAME=VALUE  set NAME=VALUE in every rank's environment\n"
    "                      (repeatable)\n"
    "  -l, --label         forward each rank's stdout and stderr line by line\n"
    "                      with a \"[RANK] \" prefix (default: the ranks "
    "write\n"
    "                      to lcrun's stdout and stderr directly)\n"
    "  --pmi-port          serve PMI over TCP on 127.0.0.1 with PMI_PORT and\n"
    "                      PMI_ID instead of PMI_FD (like hydra -pmi-port);\n"
    "                      each PMI_ID may connect once, and only with the\n"
    "                      job's secret (LCI_PMI_SECRET, 128 random bits\n"
    "                      handed to the ranks only)\n"
    "  -k, --keep-going    when a rank fails, report it and let the others\n"
    "                      run on (they see the failure through LCI's peer\n"
    "                      failure detection); PMI barriers that can no\n"
    "                      longer complete fail (rc=1) instead of ending the\n"
    "                      job. --timeout still applies\n"
    "  -v, --verbose       print the PMI requests and replies to stderr\n"
    "  -h, --help          print this help and exit\n"
    "  --version           print lcrun's version and exit\n"
    "\n"
    "Exit status: 0 when all ranks exit 0. When a rank fails, lcrun prints\n"
    "\"lcrun: rank R (pid P) died: killed by signal S (SIGNAME)\" (or "
    "\"exited\n"
    "with status C\"); the others get SIGTERM, then SIGKILL 2 s later\n"
    "(with --keep-going: they run on to their end), and lcrun exits with the\n"
    "first failed rank's status: its exit code, or 128+S if it was killed by\n"
    "signal S (a PMI abort: its exit code, at least 1). 124: timeout. 128+S:\n"
    "lcrun got SIGINT, SIGTERM or SIGHUP (S), which it forwards to the\n"
    "ranks. 2: bad usage.\n";

struct options_t {
  int nranks = 1;
  double timeout = 0;  // seconds; 0 = none
  bool pmi_port = false;
  bool verbose = false;
  bool label = false;
  bool keep_going = false;
  std::vector<std::string> env;  // NAME=VALUE for every rank
  std::vector<char*> command;    // PROGRAM ARGS... nullptr
};

// One forwarded output stream of a rank (--label).
struct stream_t {
  int fd = -1;       // read end of the rank's pipe; -1 once at EOF
  int out = -1;      // lcrun's stdout or stderr
  std::string line;  // a partial line waiting for its newline
};

struct rank_t {
  pid_t pid = -1;
  bool exited = false;    // observed with WNOWAIT: still a zombie
  bool signaled = false;  // killed by signal `code`, else exited with `code`
  int code = 0;
  bool reaped = false;
  bool reported = false;  // its failure was printed (--keep-going)
  stream_t streams[2];    // stdout, stderr (--label only)
};

int g_wake_pipe[2] = {-1, -1};
volatile sig_atomic_t g_term_signal = 0;

void on_signal(int sig)
{
  int saved_errno = errno;
  if (sig != SIGCHLD) g_term_signal = sig;
  unsigned char byte = 0;
  ssize_t ignored = write(g_wake_pipe[1], &byte, 1);
  (void)ignored;
  errno = saved_errno;
}

int usage_error(const std::string& message)
{
  std::fprintf(stderr, "lcrun: %s\nTry 'lcrun --help' for more information.\n",
               message.c_str());
  return kExitUsage;
}

bool parse_seconds(const char* text, double* seconds)
{
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !std::isfinite(value) ||
      value < 0) {
    return false;
  }
  *seconds = value;
  return true;
}

// Returns -1 to go on, else the exit status lcrun should end with.
// getopt_long in "+" mode: the first non-option argument is the program,
// and everything after it is the program's.
int parse_args(int argc, char** argv, options_t* opt)
{
  const char* env_timeout = std::getenv("LCRUN_TIMEOUT");
  if (env_timeout != nullptr && env_timeout[0] != '\0' &&
      !parse_seconds(env_timeout, &opt->timeout)) {
    return usage_error(std::string("LCRUN_TIMEOUT='") + env_timeout +
                       "' is not a number of seconds >= 0");
  }
  // "-np N" (mpiexec's spelling) is "-n N"
  std::vector<char*> args(argv, argv + argc);
  static char dash_n[] = "-n";
  for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i)
    if (std::strcmp(argv[i], "-np") == 0) args[i] = dash_n;
  enum { kTimeout = 256, kPmiPort, kVersion };
  const option longopts[] = {{"np", required_argument, nullptr, 'n'},
                             {"timeout", required_argument, nullptr, kTimeout},
                             {"env", required_argument, nullptr, 'x'},
                             {"label", no_argument, nullptr, 'l'},
                             {"pmi-port", no_argument, nullptr, kPmiPort},
                             {"keep-going", no_argument, nullptr, 'k'},
                             {"verbose", no_argument, nullptr, 'v'},
                             {"help", no_argument, nullptr, 'h'},
                             {"version", no_argument, nullptr, kVersion},
                             {nullptr, 0, nullptr, 0}};
  opterr = 0;  // our own messages
  optind = 1;
  int c;
  while ((c = getopt_long(argc, args.data(), "+:n:x:lkvh", longopts,
                          nullptr)) != -1) {
    switch (c) {
      case 'h':
        std::fputs(kUsage, stdout);
        return 0;
      case kVersion:
        std::printf("lcrun (LCI) %s\n", LCI_VERSION_STRING);
        return 0;
      case 'n': {
        long long n = 0;
        if (!lci::bootstrap::pmi_wire::parse_int(optarg, &n) || n < 1 ||
            n > kMaxRanks) {
          return usage_error(std::string("invalid number of ranks '") + optarg +
                             "' (expected an integer in [1, " +
                             std::to_string(kMaxRanks) + "])");
        }
        opt->nranks = static_cast<int>(n);
        break;
      }
      case kTimeout:
        if (!parse_seconds(optarg, &opt->timeout)) {
          return usage_error(std::string("invalid --timeout '") + optarg +
                             "' (expected a number of seconds >= 0)");
        }
        break;
      case 'x': {
        std::string kv = optarg;
        std::size_t eq = kv.find('=');
        if (eq == 0 || eq == std::string::npos ||
            kv.find_first_of(" \t\n") < eq) {
          return usage_error("invalid environment setting '" + kv +
                             "' (expected NAME=VALUE)");
        }
        opt->env.push_back(kv);
        break;
      }
      case 'l':
        opt->label = true;
        break;
      case kPmiPort:
        opt->pmi_port = true;
        break;
      case 'k':
        opt->keep_going = true;
        break;
      case 'v':
        opt->verbose = true;
        break;
      case ':':
        return usage_error(std::string(args[optind - 1]) + " needs a value");
      default:
        return usage_error(std::string("unknown option '") + args[optind - 1] +
                           "'");
    }
  }
  int i = optind;
  if (i >= argc) return usage_error("missing the program to run");
  opt->command.assign(argv + i, argv + argc);
  opt->command.push_back(nullptr);
  return -1;
}

void install_signal_handlers()
{
  if (pipe2(g_wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::perror("lcrun: pipe2");
    std::exit(1);
  }
  struct sigaction action {
  };
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) {
    sigaction(sig, &action, nullptr);
  }
  // A closed output pipe must be an error, not our death.
  signal(SIGPIPE, SIG_IGN);
}

void drain_wake_pipe()
{
  unsigned char buf[256];
  while (read(g_wake_pipe[0], buf, sizeof(buf)) > 0) {
  }
}

// Listening socket for --pmi-port; sets `spec` to "127.0.0.1:PORT".
int listen_loopback(int backlog, std::string* spec)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(fd, backlog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("lcrun: cannot listen on 127.0.0.1 for --pmi-port");
    std::exit(1);
  }
  *spec = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  return fd;
}

// The --pmi-port job secret: 128 bits from the kernel's random source, as
// 32 hex digits. Only the ranks get it (in LCI_PMI_SECRET); another local
// process that finds the port cannot guess it.
std::string make_secret()
{
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::perror("lcrun: getrandom for the --pmi-port job secret");
      std::exit(1);
    }
    got += static_cast<std::size_t>(n);
  }
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

// Runs in the forked child: prepares the rank's environment and execs.
// `out_fds`: the write ends of the --label pipes for stdout and stderr, or
// -1 to keep lcrun's.
[[noreturn]] void exec_rank(const options_t& opt, int rank, int pmi_fd,
                            const int out_fds[2], const std::string& port_spec,
                            const std::string& secret, const sigset_t& old_mask,
                            pid_t parent)
{
  struct sigaction action {
  };
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    sigaction(sig, &action, nullptr);
  }
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  for (int i = 0; i < 2; ++i) {
    if (out_fds[i] >= 0)
      dup2(out_fds[i], i == 0 ? STDOUT_FILENO : STDERR_FILENO);
  }
  // Each rank leads its own session, and so its own process group, which
  // is what lcrun signals; hydra starts its ranks the same way. A rank
  // that reads lcrun's terminal is then not a background job of it (the
  // kernel would stop it), and with autogroup scheduling a busy machine
  // shares its cores among the ranks as among other programs' sessions.
  if (setsid() < 0) setpgid(0, 0);
#ifdef __linux__
  // Do not outlive lcrun if it is killed with SIGKILL.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
#else
  (void)parent;
#endif
  if (rank > 0) {
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0 && null_fd != STDIN_FILENO) {
      dup2(null_fd, STDIN_FILENO);
      close(null_fd);
    }
  }
  std::string rank_text = std::to_string(rank);
  std::string size_text = std::to_string(opt.nranks);
  if (pmi_fd >= 0) {
    fcntl(pmi_fd, F_SETFD, 0);  // keep it across exec
    setenv("PMI_FD", std::to_string(pmi_fd).c_str(), 1);
    setenv("PMI_RANK", rank_text.c_str(), 1);
    setenv("PMI_SIZE", size_text.c_str(), 1);
    unsetenv("PMI_PORT");
    unsetenv("PMI_ID");
    unsetenv("LCI_PMI_SECRET");
  } else {
    setenv("PMI_PORT", port_spec.c_str(), 1);
    setenv("PMI_ID", rank_text.c_str(), 1);
    setenv("LCI_PMI_SECRET", secret.c_str(), 1);
    unsetenv("PMI_FD");
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
  }
  setenv("PMI_SPAWNED", "0", 1);
  for (const std::string& kv : opt.env) {
    std::size_t eq = kv.find('=');
    setenv(kv.substr(0, eq).c_str(), kv.c_str() + eq + 1, 1);
  }
  execvp(opt.command[0], opt.command.data());
  std::fprintf(stderr, "lcrun: rank %d: cannot execute '%s': %s\n", rank,
               opt.command[0], std::strerror(errno));
  _exit(127);
}

class job_t
{
 public:
  explicit job_t(const options_t& opt)
      : opt_(opt),
        ranks_(opt.nranks),
        secret_(opt.pmi_port ? make_secret() : std::string()),
        server_(opt.nranks, "lcrun_" + std::to_string(getpid()), opt.verbose,
                secret_)
  {
  }
  ~job_t()
  {
    if (listen_fd_ >= 0) close(listen_fd_);
  }

  // Starts the ranks, supervises them, returns lcrun's exit status.
  int run();

 private:
  bool launch(int rank);
  void observe();
  void forward(stream_t& stream, int rank);
  void emit(const stream_t& stream, int rank, const std::string& text);
  void drain_output();
  bool all_exited() const;
  int supervise();
  void serve_poll(int timeout_ms);
  void signal_all(int sig);
  void terminate(int first_sig);
  void reap_all();

  const options_t& opt_;
  std::vector<rank_t> ranks_;
  std::string secret_;  // --pmi-port: the job secret; empty otherwise
  lcrun::pmi_server_t server_;
  int listen_fd_ = -1;
  std::string port_spec_;
};

bool job_t::launch(int rank)
{
  int sv[2] = {-1, -1};
  if (!opt_.pmi_port &&
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    std::fprintf(stderr, "lcrun: socketpair for rank %d: %s\n", rank,
                 std::strerror(errno));
    return false;
  }
  // --label: a pipe per output stream; we keep the read ends.
  int pipes[2][2] = {{-1, -1}, {-1, -1}};
  int child_out[2] = {-1, -1};
  for (int i = 0; opt_.label && i < 2; ++i) {
    if (pipe2(pipes[i], O_CLOEXEC) != 0) {
      std::fprintf(stderr, "lcrun: pipe for rank %d: %s\n", rank,
                   std::strerror(errno));
      for (int fd : {sv[0], sv[1], pipes[0][0], pipes[0][1]}) {
        if (fd >= 0) close(fd);
      }
      return false;
    }
    child_out[i] = pipes[i][1];
  }
  // Block our signals across fork so that the child never runs our handlers.
  sigset_t block, old_mask;
  sigemptyset(&block);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&block, sig);
  sigprocmask(SIG_BLOCK, &block, &old_mask);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    exec_rank(opt_, rank, sv[1], child_out, port_spec_, secret_, old_mask,
              parent);
  }
  int fork_errno = errno;
  // The child makes itself a session leader (setsid fails for a group
  // leader, so lcrun does not make it one first); until it has, a signal
  // to its group falls back to the process (signal_all).
  if (pid > 0) ranks_[rank].pid = pid;
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  if (sv[1] >= 0) close(sv[1]);
  for (int i = 0; opt_.label && i < 2; ++i) {
    close(pipes[i][1]);
    if (pid < 0) {
      close(pipes[i][0]);
      continue;
    }
    fcntl(pipes[i][0], F_SETFL, O_NONBLOCK);
    ranks_[rank].streams[i].fd = pipes[i][0];
    ranks_[rank].streams[i].out = i == 0 ? STDOUT_FILENO : STDERR_FILENO;
  }
  if (pid < 0) {
    std::fprintf(stderr, "lcrun: fork for rank %d: %s\n", rank,
                 std::strerror(fork_errno));
    if (sv[0] >= 0) close(sv[0]);
    return false;
  }
  if (sv[0] >= 0) server_.add_connection(sv[0], rank);
  return true;
}

// libfabric's shm provider keeps each endpoint in "/dev/shm/<pid>:<n>:<m>"
// and removes it when the endpoint closes, or on SIGTERM/SIGINT; a rank
// killed by SIGKILL leaves it behind (16 MiB of memory each, and a later
// process with the same pid finds the name taken). LCI's native shm backend
// names its segments "/dev/shm/lci-shm-<pid>-<nonce>-<n>" and unlinks them
// once every peer has mapped them, so a rank killed during startup can
// leave one. LCI names its libfabric shm endpoints "lci-<pid>-<nonce>-<n>"
// (src/net/ofi/ofi.cpp), which a killed rank leaves as the provider's own
// names. Removes all three kinds of a rank that ended; it is still a
// zombie, so its pid is not reused yet.
void remove_shm_regions(pid_t pid)
{
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return;
  std::string prefix = std::to_string(static_cast<long>(pid)) + ":";
  std::string native =
      "lci-shm-" + std::to_string(static_cast<long>(pid)) + "-";
  std::string ofi = "lci-" + std::to_string(static_cast<long>(pid)) + "-";
  while (dirent* entry = readdir(dir)) {
    if (std::strncmp(entry->d_name, prefix.c_str(), prefix.size()) != 0 &&
        std::strncmp(entry->d_name, native.c_str(), native.size()) != 0 &&
        std::strncmp(entry->d_name, ofi.c_str(), ofi.size()) != 0) {
      continue;
    }
    std::string path = std::string("/dev/shm/") + entry->d_name;
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_uid == geteuid()) {
      unlink(path.c_str());
    }
  }
  closedir(dir);
}

// Notes ranks that ended, leaving them zombies (WNOWAIT) so that their pid,
// and so their process group id, cannot be reused before we are done.
void job_t::observe()
{
  for (rank_t& r : ranks_) {
    if (r.pid <= 0 || r.exited) continue;
    siginfo_t info{};
    if (waitid(P_PID, r.pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
        info.si_pid != r.pid) {
      continue;
    }
    r.exited = true;
    r.signaled = info.si_code != CLD_EXITED;
    r.code = info.si_status;
    if (r.signaled) remove_shm_regions(r.pid);
  }
}

bool job_t::all_exited() const
{
  for (const rank_t& r : ranks_) {
    if (r.pid > 0 && !r.exited) return false;
  }
  return true;
}

// "killed by signal 9 (SIGKILL)" or "exited with status 3".
std::string describe_end(const rank_t& r)
{
  if (!r.signaled) return "exited with status " + std::to_string(r.code);
  std::string text = "killed by signal " + std::to_string(r.code) + " (";
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
  const char* abbrev = sigabbrev_np(r.code);
  if (abbrev != nullptr) {
    text += std::string("SIG") + abbrev + ": ";
  }
#endif
  const char* desc = strsignal(r.code);
  text += desc != nullptr ? desc : "unknown signal";
  return text + ")";
}

void job_t::signal_all(int sig)
{
  for (const rank_t& r : ranks_) {
    if (r.pid <= 0 || r.reaped) continue;
    if (kill(-r.pid, sig) != 0 && errno == ESRCH) kill(r.pid, sig);
  }
}

// Sends `first_sig` to every rank's process group, waits up to kKillGrace
// for them to exit, then sends SIGKILL to the groups (this also ends
// leftovers, like children of a rank that already exited).
void job_t::terminate(int first_sig)
{
  g_term_signal = 0;
  signal_all(first_sig);
  auto give_up = clock_type::now() + kKillGrace;
  observe();
  while (!all_exited() && g_term_signal == 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        give_up - clock_type::now());
    if (left.count() <= 0) break;
    pollfd wake{g_wake_pipe[0], POLLIN, 0};
    poll(&wake, 1, static_cast<int>(std::min<long long>(left.count(), 100)));
    drain_wake_pipe();
    observe();
  }
  signal_all(SIGKILL);
  // the ranks killed now end as zombies too: observe them, so that their
  // shared-memory files go (remove_shm_regions) while their pids are ours
  // (after a second signal to lcrun, or with a rank ignoring SIGTERM, a rank
  // reaped unobserved would leave its files behind)
  auto killed_by = clock_type::now() + std::chrono::seconds(5);
  observe();
  while (!all_exited() && clock_type::now() < killed_by) {
    poll(nullptr, 0, 10);
    observe();
  }
}

void job_t::reap_all()
{
  for (rank_t& r : ranks_) {
    if (r.pid <= 0 || r.reaped) continue;
    int status;
    while (waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.reaped = true;
  }
}

void write_all(int fd, const std::string& data)
{
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd out{fd, POLLOUT, 0};
      poll(&out, 1, 100);
      continue;
    }
    if (n <= 0) return;  // our own output is gone: drop the text
    done += static_cast<std::size_t>(n);
  }
}

// Writes `text` (whole lines) with a "[rank] " prefix on each line.
void job_t::emit(const stream_t& stream, int rank, const std::string& text)
{
  std::string prefix = "[" + std::to_string(rank) + "] ";
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    end = end == std::string::npos ? text.size() : end + 1;
    out += prefix;
    out.append(text, pos, end - pos);
    pos = end;
  }
  write_all(stream.out, out);
}

// Reads what a rank wrote; forwards the complete lines, keeps the rest.
void job_t::forward(stream_t& stream, int rank)
{
  char buf[65536];
  ssize_t n = read(stream.fd, buf, sizeof(buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    if (!stream.line.empty()) emit(stream, rank, stream.line + "\n");
    stream.line.clear();
    close(stream.fd);
    stream.fd = -1;
    return;
  }
  stream.line.append(buf, static_cast<std::size_t>(n));
  std::size_t last = stream.line.rfind('\n');
  if (last != std::string::npos) {
    emit(stream, rank, stream.line.substr(0, last + 1));
    stream.line.erase(0, last + 1);
  } else if (stream.line.size() >= sizeof(buf)) {
    // a very long line: forward it in pieces
    emit(stream, rank, stream.line + "\n");
    stream.line.clear();
  }
}

// After the ranks ended: forwards what is left in the pipes, until every
// pipe is at EOF or, if something else (a leftover grandchild) keeps one
// open, for at most kKillGrace.
void job_t::drain_output()
{
  auto give_up = clock_type::now() + kKillGrace;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, int>> who;  // rank, stream
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      for (int i = 0; i < 2; ++i) {
        if (ranks_[r].streams[i].fd < 0) continue;
        fds.push_back({ranks_[r].streams[i].fd, POLLIN, 0});
        who.emplace_back(static_cast<int>(r), i);
      }
    }
    if (fds.empty()) return;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        give_up - clock_type::now());
    if (left.count() <= 0 ||
        poll(fds.data(), fds.size(), static_cast<int>(left.count())) <= 0) {
      break;
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      forward(ranks_[who[k].first].streams[who[k].second], who[k].first);
    }
  }
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    for (stream_t& stream : ranks_[r].streams) {
      if (stream.fd < 0) continue;
      if (!stream.line.empty()) {
        emit(stream, static_cast<int>(r), stream.line + "\n");
      }
      close(stream.fd);
      stream.fd = -1;
    }
  }
}

// One round of poll(): wake-ups, new PMI_PORT connections, PMI requests,
// rank output (--label).
void job_t::serve_poll(int timeout_ms)
{
  std::vector<pollfd> fds;
  fds.push_back({g_wake_pipe[0], POLLIN, 0});
  if (listen_fd_ >= 0) fds.push_back({listen_fd_, POLLIN, 0});
  std::vector<std::pair<int, int>> who;  // rank, stream
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    for (int i = 0; i < 2; ++i) {
      if (ranks_[r].streams[i].fd < 0) continue;
      fds.push_back({ranks_[r].streams[i].fd, POLLIN, 0});
      who.emplace_back(static_cast<int>(r), i);
    }
  }
  std::size_t first_conn = fds.size();
  server_.append_pollfds(&fds);
  if (poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
  drain_wake_pipe();
  std::size_t first_stream = first_conn - who.size();
  for (std::size_t k = 0; k < who.size(); ++k) {
    if (fds[first_stream + k].revents == 0) continue;
    forward(ranks_[who[k].first].streams[who[k].second], who[k].first);
  }
  for (std::size_t i = first_conn; i < fds.size(); ++i) {
    if (fds[i].revents != 0) server_.on_readable(fds[i].fd);
  }
  if (listen_fd_ >= 0 && (fds[1].revents & POLLIN)) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) server_.add_connection(fd, -1);
  }
  if (listen_fd_ >= 0) server_.expire_unidentified();
}

int job_t::supervise()
{
  int first_failure = -1;  // --keep-going: the status lcrun ends with
  bool has_deadline = opt_.timeout > 0;
  auto deadline =
      clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                              std::chrono::duration<double>(opt_.timeout));
  while (true) {
    observe();
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      rank_t& r = ranks_[i];
      if (!r.exited || r.reported || (!r.signaled && r.code == 0)) continue;
      r.reported = true;
      std::string how = describe_end(r);
      const int status = r.signaled ? 128 + r.code : r.code;
      if (first_failure < 0) first_failure = status;
      if (opt_.keep_going) {
        std::fprintf(stderr,
                     "lcrun: rank %zu (pid %d) died: %s; the other ranks "
                     "keep going (--keep-going)\n",
                     i, static_cast<int>(r.pid), how.c_str());
        server_.mark_dead(static_cast<int>(i));
        continue;
      }
      std::fprintf(stderr,
                   "lcrun: rank %zu (pid %d) died: %s; terminating the other "
                   "ranks\n",
                   i, static_cast<int>(r.pid), how.c_str());
      terminate(SIGTERM);
      return status;
    }
    if (const auto& abort = server_.abort_request()) {
      std::fprintf(stderr,
                   "lcrun: rank %d called PMI abort (exit code %d)%s%s; "
                   "terminating the job\n",
                   abort->rank, abort->exit_code,
                   abort->message.empty() ? "" : ": ", abort->message.c_str());
      terminate(SIGTERM);
      return abort->exit_code > 0 && abort->exit_code < 256 ? abort->exit_code
                                                            : 1;
    }
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      if (ranks_[i].exited && opt_.keep_going) {
        // the others must not wait for it: fail their barrier
        server_.mark_dead(static_cast<int>(i));
        continue;
      }
      if (ranks_[i].exited && server_.barrier_waits_for(static_cast<int>(i))) {
        std::fprintf(stderr,
                     "lcrun: rank %zu exited while other ranks wait for it in "
                     "a PMI barrier; terminating the job\n",
                     i);
        terminate(SIGTERM);
        return 1;
      }
    }
    if (all_exited()) return first_failure < 0 ? 0 : first_failure;
    int sig = g_term_signal;
    if (sig != 0) {
      std::fprintf(stderr,
                   "lcrun: got signal %d (%s); forwarding it to the "
                   "ranks\n",
                   sig, strsignal(sig));
      terminate(sig);
      return 128 + sig;
    }
    int timeout_ms = -1;
    if (has_deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - clock_type::now());
      if (left.count() <= 0) {
        std::fprintf(stderr,
                     "lcrun: timeout: the job did not finish within %g s; "
                     "killing the ranks\n",
                     opt_.timeout);
        terminate(SIGTERM);
        return kExitTimeout;
      }
      // +1: wake up at or just after the deadline, not just before.
      timeout_ms =
          static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30));
    }
    // --pmi-port: wake up at least once a second to close connections
    // that never identify themselves
    if (listen_fd_ >= 0 && (timeout_ms < 0 || timeout_ms > 1000))
      timeout_ms = 1000;
    serve_poll(timeout_ms);
  }
}

int job_t::run()
{
  if (opt_.pmi_port)
    listen_fd_ = listen_loopback(opt_.nranks + 16, &port_spec_);
  int status = -1;
  for (int r = 0; r < opt_.nranks && status < 0; ++r) {
    if (!launch(r)) {
      terminate(SIGTERM);
      status = 1;
    }
  }
  if (status < 0) status = supervise();
  drain_output();
  reap_all();
  return status;
}

}  // namespace

int main(int argc, char** argv)
{
  options_t opt;
  int status = parse_args(argc, argv, &opt);
  if (status >= 0) return status;
  install_signal_handlers();
  job_t job(opt);
  return job.run();
}
