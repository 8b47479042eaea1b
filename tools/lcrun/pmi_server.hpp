// lcrun's PMI-1 server: serves the PMI-1 wire protocol (see
// src/bootstrap/pmi1.cpp for the client side) to the ranks of one job over
// already-connected stream sockets. Single-threaded; the caller polls the
// connections and calls on_readable().
#ifndef LCRUN_PMI_SERVER_HPP
#define LCRUN_PMI_SERVER_HPP

#include <poll.h>

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace lcrun
{

// A rank asked the job to abort ("cmd=abort").
struct abort_request_t {
  int rank;
  int exit_code;
  std::string message;
};

class pmi_server_t
{
 public:
  // `secret`: when not empty, a PMI_PORT connection must present it in its
  // "cmd=initack pmiid=R secret=S" or it is refused and closed (lcrun
  // --pmi-port hands it to its ranks in LCI_PMI_SECRET).
  pmi_server_t(int size, std::string kvsname, bool verbose,
               std::string secret = std::string());
  ~pmi_server_t();
  pmi_server_t(const pmi_server_t&) = delete;
  pmi_server_t& operator=(const pmi_server_t&) = delete;

  // Takes ownership of a connected socket. rank >= 0 binds it to that rank
  // (PMI_FD mode); -1 leaves it unbound until the client sends
  // "cmd=initack pmiid=R" (PMI_PORT mode).
  void add_connection(int fd, int rank);
  // Appends a POLLIN entry for every open connection.
  void append_pollfds(std::vector<pollfd>* fds) const;
  // Reads what is available on `fd` and serves the complete requests.
  void on_readable(int fd);
  // True when ranks wait in a barrier that `rank` has not entered, i.e. the
  // barrier cannot complete if `rank` is gone.
  bool barrier_waits_for(int rank) const;
  // `rank` is gone and the job goes on (lcrun --keep-going): the barrier in
  // progress and every later one fail ("cmd=barrier_out rc=1"), since they
  // can never complete. Idempotent.
  void mark_dead(int rank);
  const std::optional<abort_request_t>& abort_request() const { return abort_; }
  // Closes PMI_PORT connections that have not identified themselves within
  // kIdentifyTimeout of being accepted; call it now and then.
  void expire_unidentified();
  // Connections refused so far (wrong secret, bad or taken PMI_ID, a request
  // before "cmd=initack", too slow to identify, too many at once).
  int refused() const { return refused_; }

  static constexpr std::chrono::seconds kIdentifyTimeout{30};
  // At most this many connections may wait to identify themselves.
  static constexpr int kMaxUnidentified = 64;

 private:
  struct conn_t {
    int fd = -1;
    int rank = -1;
    std::string inbuf;
    bool in_barrier = false;
    bool in_mcmd = false;  // inside a multi-line "mcmd=" request
    std::chrono::steady_clock::time_point accepted;
  };

  void serve(conn_t& conn, const std::string& line);
  void serve_put(conn_t& conn, const std::map<std::string, std::string>& msg);
  void serve_get(conn_t& conn, const std::map<std::string, std::string>& msg);
  void serve_barrier(conn_t& conn);
  void fail_barrier();
  void reply(conn_t& conn, const std::string& line);
  void drop(int fd);
  void refuse(conn_t& conn, const std::string& cmd, const std::string& why);
  bool secret_matches(const std::string& offered) const;
  std::string who(const conn_t& conn) const;

  int size_;
  std::string kvsname_;
  bool verbose_;
  std::map<int, conn_t> conns_;  // by fd
  std::map<std::string, std::string> kvs_;
  int barrier_count_ = 0;
  std::set<int> dead_;     // ranks known to be gone (mark_dead)
  std::set<int> claimed_;  // ranks that sent "cmd=initack" (PMI_PORT mode)
  std::optional<abort_request_t> abort_;
  std::string secret_;
  int refused_ = 0;
};

}  // namespace lcrun

#endif  // LCRUN_PMI_SERVER_HPP
