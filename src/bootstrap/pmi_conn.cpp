// The connection to a PMI process manager (see pmi_conn.hpp).
#include "pmi_conn.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace lci::bootstrap
{
namespace
{

// Bounds a reply in case the peer is not a PMI server.
constexpr std::size_t kMaxReply = 1 << 20;

bool env_set(const char* name)
{
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0';
}

// Connects to "host:port" (PMI_PORT). The host may be "[v6-address]".
int connect_port(const std::string& who, const std::string& spec)
{
  std::size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) {
    pmi_fail(who, "PMI_PORT='" + spec + "' is not of the form host:port");
  }
  std::string host = spec.substr(0, colon);
  std::string port = spec.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &list);
  if (rc != 0) {
    pmi_fail(who,
             "PMI_PORT='" + spec + "': cannot resolve: " + gai_strerror(rc));
  }
  int fd = -1;
  int last_errno = 0;
  for (addrinfo* ai = list; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    int ret;
    do {
      ret = connect(fd, ai->ai_addr, ai->ai_addrlen);
    } while (ret != 0 && errno == EINTR);
    if (ret != 0) {
      last_errno = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(list);
  if (fd < 0) {
    pmi_fail(who, "PMI_PORT='" + spec + "': cannot connect to the process " +
                      "manager: " + std::strerror(last_errno));
  }
  return fd;
}

}  // namespace

void pmi_fail(const std::string& who, const std::string& what)
{
  throw std::runtime_error("lci bootstrap (" + who + "): " + what);
}

std::string brief_request(const std::string& request_text)
{
  std::string request = pmi_wire::redact_secret(request_text);
  if (request.size() <= 120) return "'" + request + "'";
  return "'" + request.substr(0, 117) + "...'";
}

long long pmi_env_int(const std::string& who, const char* name, long long min,
                      long long max)
{
  const char* text = std::getenv(name);
  if (text == nullptr || text[0] == '\0') {
    pmi_fail(who, std::string(name) + " is not set");
  }
  long long value = 0;
  if (!pmi_wire::parse_int(text, &value) || value < min || value > max) {
    pmi_fail(who, std::string(name) + "='" + text + "' is not an integer in [" +
                      std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return value;
}

pmi_conn_t::pmi_conn_t(const std::string& who) : who_(who)
{
  if (env_set("PMI_FD")) {
    const char* text = std::getenv("PMI_FD");
    fd_ = static_cast<int>(pmi_env_int(who_, "PMI_FD", 0, INT_MAX));
    if (fcntl(fd_, F_GETFD) < 0) {
      fail(std::string("PMI_FD='") + text +
           "' is not an open file descriptor (the launcher's connection is "
           "gone, or the variable was inherited from another job)");
    }
  } else if (env_set("PMI_PORT")) {
    fd_ = connect_port(who_, std::getenv("PMI_PORT"));
    own_fd_ = true;
  } else {
    fail("neither PMI_FD nor PMI_PORT is set (not started by a PMI launcher)");
  }
  // Programs we exec must not inherit the connection.
  fcntl(fd_, F_SETFD, FD_CLOEXEC);
  struct stat st {
  };
  if (fstat(fd_, &st) == 0) {
    fd_dev_ = st.st_dev;
    fd_ino_ = st.st_ino;
  }
}

pmi_conn_t::~pmi_conn_t()
{
  // An inherited PMI_FD stays open: it belongs to the process.
  if (own_fd_ && fd_ >= 0) close(fd_);
}

void pmi_conn_t::fail(const std::string& what)
{
  if (!broken_) first_error_ = what;
  broken_ = true;
  pmi_fail(who_, what);
}

void pmi_conn_t::hand_over(const std::string& why)
{
  if (!broken_) first_error_ = why;
  broken_ = true;
}

void pmi_conn_t::check_usable() const
{
  if (broken_) {
    pmi_fail(who_,
             "the connection to the process manager is unusable after an "
             "earlier error: " +
                 first_error_);
  }
}

void pmi_conn_t::send_all(const std::string& data, const std::string& what)
{
  check_usable();
  struct stat st {
  };
  if (!own_fd_ &&
      (fstat(fd_, &st) != 0 || st.st_dev != fd_dev_ || st.st_ino != fd_ino_)) {
    fail("cannot send " + brief_request(what) +
         ": PMI_FD=" + std::to_string(fd_) +
         " is no longer the connection to the process manager (another "
         "PMI client in this process, such as MPI_Finalize, closed it)");
  }
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) {
      n = write(fd_, data.data() + done, data.size() - done);
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      fail("cannot send " + brief_request(what) +
           " to the process manager: " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
}

void pmi_conn_t::fill(const std::string& request)
{
  if (inbuf_.size() > kMaxReply) {
    fail("reply to " + brief_request(request) + " exceeds " +
         std::to_string(kMaxReply) + " bytes");
  }
  char buf[4096];
  unsigned timeout_s = timeout_s_.load();
  if (timeout_s > 0) {
    pollfd pfd{fd_, POLLIN, 0};
    int ready;
    do {
      ready =
          poll(&pfd, 1, static_cast<int>(std::min(timeout_s, 2000000u)) * 1000);
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) {
      fail("no reply to " + brief_request(request) + " within " +
           std::to_string(timeout_s) +
           " s (bootstrap_timeout): a rank may have exited or hung before "
           "reaching the same point, and the launcher did not end the job");
    }
  }
  while (true) {
    ssize_t n = read(fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      fail(
          "lost the connection to the process manager while waiting for "
          "the reply to " +
          brief_request(request) +
          " (the launcher exited or closed it; another rank may have "
          "failed)");
    }
    if (n < 0) {
      fail("cannot read the reply to " + brief_request(request) + ": " +
           std::strerror(errno));
    }
    inbuf_.append(buf, static_cast<std::size_t>(n));
    return;
  }
}

void pmi_conn_t::send_line(const std::string& line)
{
  send_all(line + "\n", line);
}

std::string pmi_conn_t::read_line(const std::string& request)
{
  check_usable();
  while (true) {
    std::size_t newline = inbuf_.find('\n');
    if (newline != std::string::npos) {
      std::string line = inbuf_.substr(0, newline);
      inbuf_.erase(0, newline + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      return line;
    }
    fill(request);
  }
}

pmi_wire::message_t pmi_conn_t::expect_v1(const std::string& request,
                                          const std::string& reply_cmd)
{
  std::string line = read_line(request);
  pmi_wire::message_t reply = pmi_wire::parse(line);
  if (pmi_wire::get(reply, "cmd") != reply_cmd) {
    fail("unexpected reply '" + line + "' to " + brief_request(request) +
         " (expected cmd=" + reply_cmd + ")");
  }
  std::string rc = pmi_wire::get(reply, "rc", "0");
  long long rc_value = 0;
  if (!pmi_wire::parse_int(rc, &rc_value) || rc_value != 0) {
    std::string msg = pmi_wire::get(reply, "msg");
    fail(brief_request(request) + " failed: rc=" + rc +
         (msg.empty() ? "" : " msg=" + msg));
  }
  return reply;
}

pmi_wire::message_t pmi_conn_t::call_v1(const std::string& request,
                                        const std::string& reply_cmd)
{
  send_line(request);
  return expect_v1(request, reply_cmd);
}

void pmi_conn_t::send_v2(const std::string& body)
{
  if (body.size() > pmi_wire::kV2MaxLength) {
    fail("request " + brief_request(body) + " is too long for PMI-2");
  }
  send_all(pmi_wire::frame_v2(body), body);
}

std::string pmi_conn_t::read_v2(const std::string& request)
{
  check_usable();
  while (inbuf_.size() < pmi_wire::kV2LengthWidth) fill(request);
  std::string prefix = inbuf_.substr(0, pmi_wire::kV2LengthWidth);
  std::size_t length = 0;
  if (!pmi_wire::parse_v2_length(prefix, &length)) {
    std::string shown = inbuf_.substr(0, 60);
    fail("reply to " + brief_request(request) +
         " is not a PMI-2 message (starts with '" + shown +
         "', not a 6-character length); does the launcher speak PMI-2?");
  }
  while (inbuf_.size() < pmi_wire::kV2LengthWidth + length) fill(request);
  std::string body = inbuf_.substr(pmi_wire::kV2LengthWidth, length);
  inbuf_.erase(0, pmi_wire::kV2LengthWidth + length);
  return body;
}

pmi_wire::message_t pmi_conn_t::call_v2(const std::string& request,
                                        const std::string& reply_cmd)
{
  send_v2(request);
  std::string body = read_v2(request);
  pmi_wire::message_t reply = pmi_wire::parse_v2(body);
  if (pmi_wire::get(reply, "cmd") != reply_cmd) {
    fail("unexpected reply " + brief_request(body) + " to " +
         brief_request(request) + " (expected cmd=" + reply_cmd + ")");
  }
  std::string rc = pmi_wire::get(reply, "rc", "0");
  long long rc_value = 0;
  if (!pmi_wire::parse_int(rc, &rc_value) || rc_value != 0) {
    // The server's own words first; Slurm sends none for a refused
    // fullinit (slurmstepd logs why), so the code's name has to do.
    std::string msg = pmi_wire::get(reply, "errmsg");
    std::string name = pmi_wire::v2_error_name(rc_value);
    fail("the process manager refused " + brief_request(request) +
         ": rc=" + rc + (name.empty() ? "" : " (" + name + ")") +
         (msg.empty() ? " without an errmsg (its log may say why)"
                      : ", errmsg='" + msg + "'"));
  }
  return reply;
}

}  // namespace lci::bootstrap
