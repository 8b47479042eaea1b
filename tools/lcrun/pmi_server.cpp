// lcrun's PMI-1 server (see pmi_server.hpp).
#include "pmi_server.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include "bootstrap/pmi_wire.hpp"

namespace lcrun
{
namespace
{

namespace wire = lci::bootstrap::pmi_wire;

// Advertised in "cmd=maxes"; the same limits as hydra.
constexpr int kKvsnameMax = 256;
constexpr int kKeylenMax = 64;
constexpr int kVallenMax = 1024;
// A client sending this much without a newline is not speaking PMI.
constexpr std::size_t kMaxRequest = 1 << 20;

}  // namespace

pmi_server_t::pmi_server_t(int size, std::string kvsname, bool verbose,
                           std::string secret)
    : size_(size),
      kvsname_(std::move(kvsname)),
      verbose_(verbose),
      secret_(std::move(secret))
{
}

pmi_server_t::~pmi_server_t()
{
  for (auto& entry : conns_) close(entry.first);
}

void pmi_server_t::add_connection(int fd, int rank)
{
  if (rank < 0) {
    int waiting = 0;
    for (const auto& entry : conns_) waiting += entry.second.rank < 0;
    if (waiting >= kMaxUnidentified) {
      std::fprintf(stderr,
                   "lcrun: refusing a PMI connection: %d others have not "
                   "identified themselves yet\n",
                   waiting);
      ++refused_;
      close(fd);
      return;
    }
  }
  conn_t conn;
  conn.fd = fd;
  conn.rank = rank;
  conn.accepted = std::chrono::steady_clock::now();
  conns_[fd] = conn;
}

void pmi_server_t::expire_unidentified()
{
  auto now = std::chrono::steady_clock::now();
  std::vector<int> late;
  for (const auto& entry : conns_) {
    if (entry.second.rank < 0 &&
        now - entry.second.accepted > kIdentifyTimeout) {
      late.push_back(entry.first);
    }
  }
  for (int fd : late) {
    std::fprintf(stderr,
                 "lcrun: closing PMI connection %d: no \"cmd=initack\" "
                 "within %lld s\n",
                 fd, static_cast<long long>(kIdentifyTimeout.count()));
    ++refused_;
    drop(fd);
  }
}

// Constant-time comparison: the time taken does not tell how many leading
// characters of a guess were right.
bool pmi_server_t::secret_matches(const std::string& offered) const
{
  unsigned diff = offered.size() == secret_.size() ? 0u : 1u;
  for (std::size_t i = 0; i < secret_.size(); ++i) {
    char c = i < offered.size() ? offered[i] : '\0';
    diff |= static_cast<unsigned char>(c ^ secret_[i]);
  }
  return diff == 0;
}

// A connection that has not become one of the job's ranks: answer once,
// close it, say so on stderr (the launcher's user should know that someone
// tried).
void pmi_server_t::refuse(conn_t& conn, const std::string& cmd,
                          const std::string& why)
{
  std::fprintf(stderr, "lcrun: refusing PMI connection %d: %s\n", conn.fd,
               why.c_str());
  std::string code = why.substr(0, why.find(':'));
  for (char& c : code) {
    if (c == ' ') c = '_';
  }
  reply(conn, "cmd=" + cmd + (cmd == "initack" ? "" : "_result") +
                  " rc=-1 msg=" + code);
  ++refused_;
  drop(conn.fd);
}

void pmi_server_t::append_pollfds(std::vector<pollfd>* fds) const
{
  for (const auto& entry : conns_) fds->push_back({entry.first, POLLIN, 0});
}

bool pmi_server_t::barrier_waits_for(int rank) const
{
  if (barrier_count_ == 0) return false;
  for (const auto& entry : conns_) {
    if (entry.second.rank == rank && entry.second.in_barrier) return false;
  }
  return true;
}

std::string pmi_server_t::who(const conn_t& conn) const
{
  if (conn.rank >= 0) return "rank " + std::to_string(conn.rank);
  return "connection " + std::to_string(conn.fd);
}

void pmi_server_t::on_readable(int fd)
{
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  char buf[65536];
  ssize_t n = read(fd, buf, sizeof(buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    // EOF (the rank exited or closed the socket) or a reset connection.
    drop(fd);
    return;
  }
  it->second.inbuf.append(buf, static_cast<std::size_t>(n));
  std::size_t newline;
  // serve() may drop the connection, so look it up again every time.
  while ((it = conns_.find(fd)) != conns_.end() &&
         (newline = it->second.inbuf.find('\n')) != std::string::npos) {
    std::string line = it->second.inbuf.substr(0, newline);
    it->second.inbuf.erase(0, newline + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    serve(it->second, line);
  }
  if (it != conns_.end() && it->second.inbuf.size() > kMaxRequest) {
    std::fprintf(stderr,
                 "lcrun: %s sent %zu bytes without a newline; closing its "
                 "PMI connection\n",
                 who(it->second).c_str(), it->second.inbuf.size());
    drop(fd);
  }
}

void pmi_server_t::drop(int fd)
{
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  if (it->second.in_barrier) --barrier_count_;
  close(fd);
  conns_.erase(it);
}

void pmi_server_t::reply(conn_t& conn, const std::string& line)
{
  if (verbose_)
    std::fprintf(stderr, "lcrun: -> %s: %s\n", who(conn).c_str(), line.c_str());
  std::string data = line + "\n";
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n =
        send(conn.fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // the rank is gone; its exit is handled elsewhere
    done += static_cast<std::size_t>(n);
  }
}

void pmi_server_t::serve(conn_t& conn, const std::string& line)
{
  if (line.find_first_not_of(" \t") == std::string::npos) return;
  if (verbose_)
    std::fprintf(stderr, "lcrun: <- %s: %s\n", who(conn).c_str(),
                 wire::redact_secret(line).c_str());
  // Multi-line requests (spawn): skip to "endcmd", then refuse.
  if (conn.in_mcmd || line.compare(0, 5, "mcmd=") == 0) {
    conn.in_mcmd = line != "endcmd";
    if (!conn.in_mcmd) {
      reply(conn, "cmd=spawn_result rc=-1 msg=spawn_is_not_supported");
    }
    return;
  }
  wire::message_t msg = wire::parse(line);
  std::string cmd = wire::get(msg, "cmd");

  if (conn.rank < 0) {
    // PMI_PORT connections must identify themselves first, as with hydra,
    // and with lcrun's job secret when there is one.
    if (cmd != "initack") {
      refuse(conn, cmd.empty() ? "unknown" : cmd,
             "send_initack_first: \"" + cmd + "\" before \"cmd=initack\"");
      return;
    }
    long long id = -1;
    if (!wire::parse_int(wire::get(msg, "pmiid"), &id) || id < 0 ||
        id >= size_) {
      refuse(conn, cmd,
             "invalid_pmiid: pmiid='" + wire::get(msg, "pmiid") +
                 "' is not a rank of this job");
      return;
    }
    if (!secret_.empty() && !secret_matches(wire::get(msg, "secret"))) {
      refuse(conn, cmd,
             std::string("bad_secret: ") +
                 (msg.count("secret") ? "a wrong" : "no") +
                 " job secret (LCI_PMI_SECRET) for rank " + std::to_string(id));
      return;
    }
    if (claimed_.count(static_cast<int>(id))) {
      // Each PMI_ID connects once: a second claim is an outsider or a
      // confused rank, not our rank.
      refuse(conn, cmd,
             "pmiid_already_connected: a second connection for rank " +
                 std::to_string(id));
      return;
    }
    conn.rank = static_cast<int>(id);
    claimed_.insert(conn.rank);
    reply(conn, "cmd=initack rc=0");
    reply(conn, "cmd=set size=" + std::to_string(size_));
    reply(conn, "cmd=set rank=" + std::to_string(id));
    reply(conn, "cmd=set debug=0");
  } else if (cmd == "initack") {
    reply(conn, "cmd=initack rc=-1 msg=already_identified");
  } else if (cmd == "init") {
    reply(conn, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
  } else if (cmd == "get_maxes") {
    reply(conn, "cmd=maxes rc=0 kvsname_max=" + std::to_string(kKvsnameMax) +
                    " keylen_max=" + std::to_string(kKeylenMax) +
                    " vallen_max=" + std::to_string(kVallenMax));
  } else if (cmd == "get_my_kvsname") {
    reply(conn, "cmd=my_kvsname rc=0 kvsname=" + kvsname_);
  } else if (cmd == "get_universe_size") {
    reply(conn, "cmd=universe_size rc=0 size=" + std::to_string(size_));
  } else if (cmd == "get_appnum") {
    reply(conn, "cmd=appnum rc=0 appnum=0");
  } else if (cmd == "put") {
    serve_put(conn, msg);
  } else if (cmd == "get") {
    serve_get(conn, msg);
  } else if (cmd == "barrier_in") {
    serve_barrier(conn);
  } else if (cmd == "finalize") {
    reply(conn, "cmd=finalize_ack rc=0");
  } else if (cmd == "abort") {
    long long code = 1;
    wire::parse_int(wire::get(msg, "exitcode", "1"), &code);
    if (!abort_) {
      abort_ = abort_request_t{conn.rank, static_cast<int>(code),
                               wire::get(msg, "message")};
    }
  } else {
    reply(conn, "cmd=" + (cmd.empty() ? std::string("unknown") : cmd) +
                    "_result rc=-1 msg=unsupported_command");
  }
}

void pmi_server_t::serve_put(conn_t& conn, const wire::message_t& msg)
{
  std::string key = wire::get(msg, "key");
  std::string value = wire::get(msg, "value");
  const char* error = nullptr;
  if (wire::get(msg, "kvsname", kvsname_) != kvsname_) {
    error = "unknown_kvsname";
  } else if (key.empty() || key.size() >= kKeylenMax) {
    error = "invalid_key_length";
  } else if (value.size() >= kVallenMax) {
    error = "value_too_long";
  } else if (key.compare(0, 4, "PMI_") == 0) {
    error = "keys_with_PMI_prefix_are_reserved";
  }
  if (error) {
    reply(conn, std::string("cmd=put_result rc=-1 msg=") + error);
    return;
  }
  kvs_[key] = value;
  reply(conn, "cmd=put_result rc=0 msg=success");
}

void pmi_server_t::serve_get(conn_t& conn, const wire::message_t& msg)
{
  std::string key = wire::get(msg, "key");
  if (wire::get(msg, "kvsname", kvsname_) != kvsname_) {
    reply(conn, "cmd=get_result rc=-1 msg=unknown_kvsname");
    return;
  }
  auto it = kvs_.find(key);
  if (it != kvs_.end()) {
    reply(conn, "cmd=get_result rc=0 msg=success value=" + it->second);
  } else if (key == "PMI_process_mapping") {
    // All ranks on one node (MPICH reads this to find node-local peers).
    reply(conn, "cmd=get_result rc=0 msg=success value=(vector,(0,1," +
                    std::to_string(size_) + "))");
  } else {
    reply(conn, "cmd=get_result rc=1 msg=key_" + key + "_not_found");
  }
}

void pmi_server_t::mark_dead(int rank)
{
  if (!dead_.insert(rank).second) return;
  fail_barrier();
}

void pmi_server_t::fail_barrier()
{
  barrier_count_ = 0;
  for (auto& entry : conns_) {
    if (!entry.second.in_barrier) continue;
    entry.second.in_barrier = false;
    reply(entry.second,
          "cmd=barrier_out rc=1 msg=a_rank_of_the_job_is_gone_(rank_" +
              std::to_string(*dead_.begin()) + ")");
  }
}

void pmi_server_t::serve_barrier(conn_t& conn)
{
  if (conn.in_barrier) return;  // a repeated barrier_in counts once
  conn.in_barrier = true;
  if (!dead_.empty()) {
    fail_barrier();
    return;
  }
  if (++barrier_count_ < size_) return;
  barrier_count_ = 0;
  for (auto& entry : conns_) {
    if (!entry.second.in_barrier) continue;
    entry.second.in_barrier = false;
    reply(entry.second, "cmd=barrier_out rc=0");
  }
}

}  // namespace lcrun
