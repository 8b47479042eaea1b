// Internal: the connection to a PMI process manager, shared by the PMI-1
// (pmi1.cpp) and PMI-2 (pmi2.cpp) clients and by the version negotiation in
// bootstrap.cpp.
//
// The launcher either passes a connected stream socket in PMI_FD (lcrun,
// hydra's default, Slurm) or a "host:port" to connect to in PMI_PORT
// (hydra -pmi-port, lcrun --pmi-port). Both wire formats run over it:
//   PMI-1: one line of "key=value" words ending in "\n";
//   PMI-2: a 6-character decimal length, then "cmd=...;key=value;...;".
// Errors throw std::runtime_error prefixed with "lci bootstrap (<who>): ".
#ifndef LCI_BOOTSTRAP_PMI_CONN_HPP
#define LCI_BOOTSTRAP_PMI_CONN_HPP

#include <atomic>
#include <cstddef>
#include <string>

#include "pmi_wire.hpp"

namespace lci::bootstrap
{

class pmi_conn_t
{
 public:
  // Connects as the environment says (PMI_FD, else PMI_PORT). `who` names
  // the client in error messages ("pmi1", "pmi2").
  explicit pmi_conn_t(const std::string& who);
  ~pmi_conn_t();
  pmi_conn_t(const pmi_conn_t&) = delete;
  pmi_conn_t& operator=(const pmi_conn_t&) = delete;

  // True when we connected to PMI_PORT (no inherited PMI_FD).
  bool port_mode() const { return own_fd_; }
  // Renames the client in later error messages (after the version
  // negotiation picked one).
  void set_who(const std::string& who) { who_ = who; }

  // Throws; also marks the connection broken: the exchange is out of step
  // (a reply may still come) or the job is failing, so later requests throw
  // at once and the backends skip "finalize" at exit (a launcher such as
  // hydra then sees an abnormal exit and ends the job instead of waiting).
  [[noreturn]] void fail(const std::string& what);
  bool broken() const { return broken_; }
  // Another client in this process (MPI) took the connection over: never
  // write to it again; later requests throw with `why`, and the backends
  // skip "finalize" at exit as after fail().
  void hand_over(const std::string& why);
  // Bounds each wait for a reply (0: forever); see backend_t::set_timeout.
  void set_timeout(unsigned seconds) { timeout_s_.store(seconds); }

  // PMI-1 wire: sends `line` + "\n"; reads one non-empty line.
  void send_line(const std::string& line);
  std::string read_line(const std::string& request);
  // PMI-1: reads a reply to `request`, checks its cmd and rc (absent rc
  // means 0).
  pmi_wire::message_t expect_v1(const std::string& request,
                                const std::string& reply_cmd);
  pmi_wire::message_t call_v1(const std::string& request,
                              const std::string& reply_cmd);

  // PMI-2 wire: sends one length-prefixed command; reads one reply.
  void send_v2(const std::string& body);
  std::string read_v2(const std::string& request);
  // PMI-2: sends `request` (without the length), checks the reply's cmd
  // and rc.
  pmi_wire::message_t call_v2(const std::string& request,
                              const std::string& reply_cmd);

 private:
  void send_all(const std::string& data, const std::string& what);
  // Appends at least one more byte to inbuf_ or throws.
  void fill(const std::string& request);

  std::string who_;
  std::atomic<unsigned> timeout_s_{0};
  int fd_ = -1;
  bool own_fd_ = false;
  // The inherited PMI_FD's identity when we connected (fstat): if another
  // client closed it, the number may name an unrelated file by now.
  unsigned long long fd_dev_ = 0;
  unsigned long long fd_ino_ = 0;
  std::string inbuf_;
  bool broken_ = false;
  std::string first_error_;
  void check_usable() const;
};

// Shortens long requests (put values) for error messages.
std::string brief_request(const std::string& request);

// Throws std::runtime_error("lci bootstrap (<who>): <what>").
[[noreturn]] void pmi_fail(const std::string& who, const std::string& what);

// Reads an integer environment variable in [min, max]; throws naming it.
long long pmi_env_int(const std::string& who, const char* name, long long min,
                      long long max);

}  // namespace lci::bootstrap

#endif  // LCI_BOOTSTRAP_PMI_CONN_HPP
