// Connection setup, failure and diagnostics of the socket device
// (device.hpp).
#include "net/socket/device.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "util/error.hpp"

namespace lci::net::socket
{
namespace
{

[[noreturn]] void sys_fail(const char* what, const std::string& detail)
{
  util::throw_fatal("socket backend: ", what, detail.empty() ? "" : " ", detail,
                    ": ", std::strerror(errno));
}

void set_nodelay(int fd)
{
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
    sys_fail("setsockopt(TCP_NODELAY)", "");
}

void set_nonblocking(int fd)
{
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
    sys_fail("fcntl(O_NONBLOCK)", "");
}

// "a.b.c.d:port" -> sockaddr_in; false when malformed
bool parse_address(const std::string& a, sockaddr_in* out)
{
  const size_t colon = a.rfind(':');
  if (colon == std::string::npos) return false;
  std::memset(out, 0, sizeof(*out));
  out->sin_family = AF_INET;
  if (::inet_pton(AF_INET, a.substr(0, colon).c_str(), &out->sin_addr) != 1)
    return false;
  char* end = nullptr;
  const unsigned long port = std::strtoul(a.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port == 0 || port > 65535) return false;
  out->sin_port = htons(static_cast<uint16_t>(port));
  return true;
}

// Blocking read/write of exactly `len` bytes within `deadline`.
using clock_t_ = std::chrono::steady_clock;
bool exact_io(int fd, void* buf, size_t len, bool write,
              clock_t_::time_point deadline)
{
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - clock_t_::now())
                          .count();
    if (left <= 0) return false;
    pollfd pf{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    if (::poll(&pf, 1, static_cast<int>(left)) <= 0) continue;
    const ssize_t n =
        write ? ::send(fd, p, len, MSG_NOSIGNAL) : ::recv(fd, p, len, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

socket_device_t::socket_device_t(const config_t& cfg) : cfg_(cfg)
{
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) sys_fail("socket", "");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (::inet_pton(AF_INET, cfg_.ip.c_str(), &a.sin_addr) != 1)
    util::throw_fatal("socket backend: bad listening address '", cfg_.ip, "'");
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0)
    sys_fail("bind to", cfg_.ip);
  if (::listen(listen_fd_, SOMAXCONN) != 0) sys_fail("listen on", cfg_.ip);
  socklen_t alen = sizeof(a);
  if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &alen) != 0)
    sys_fail("getsockname", "");
  address_ = cfg_.ip + ":" + std::to_string(ntohs(a.sin_port));
}

// What is queued still goes out (for at most a second), then a bye, so
// that the peers take the end of the stream for an orderly one.
socket_device_t::~socket_device_t()
{
  const auto deadline = clock_t_::now() + std::chrono::seconds(1);
  for (peer_t& p : peers_) {
    if (p.fd < 0 || p.dead) continue;
    while (!p.out.empty() && !p.dead && clock_t_::now() < deadline) {
      flush(p);
      pollfd pf{p.fd, POLLOUT, 0};
      if (!p.out.empty()) ::poll(&pf, 1, 10);
    }
    if (p.dead) continue;
    hdr_t h{0, static_cast<uint8_t>(frame_t::bye), {}};
    struct iovec iov[1] = {{&h, sizeof(h)}};
    emit(p, iov, 1, nullptr, 0, nullptr);
    flush(p);
  }
  for (peer_t& p : peers_)
    if (p.fd >= 0) ::close(p.fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

// Every pair connects once: the lower rank connects to the higher one's
// listener and says who it is; the higher one accepts. A connect completes
// in the kernel's backlog before the accept, so no order of the ranks'
// calls can deadlock.
void socket_device_t::connect(const std::vector<std::string>& addrs)
{
  const int n = cfg_.rank_n, me = cfg_.rank_me;
  if (static_cast<int>(addrs.size()) != n)
    util::throw_fatal("alloc_device: ", addrs.size(), " addresses for ", n,
                      " ranks");
  const auto deadline =
      clock_t_::now() + std::chrono::seconds(cfg_.connect_timeout_s);
  peers_.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) peers_[r].rank = r;
  peers_[me].self = true;
  for (int r = me + 1; r < n; ++r) {
    sockaddr_in a{};
    if (!parse_address(addrs[r], &a))
      util::throw_fatal("alloc_device: rank ", r,
                        " sent no socket address (is its LCI_ATTR_BACKEND "
                        "socket too, or its hybrid route socket?): '",
                        addrs[r].substr(0, 40), "'");
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) sys_fail("socket", "");
    peers_[r].fd = fd;
    // a refused connect (the peer's listener not up yet cannot happen: it
    // listens before the address exchange) is an error, retried until the
    // deadline only for EINTR-like transients
    while (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      if (errno == EINTR) continue;
      sys_fail("connect to rank", std::to_string(r) + " at " + addrs[r]);
    }
    set_nodelay(fd);
    hello_t h{kHelloMagic, static_cast<uint32_t>(me)};
    if (!exact_io(fd, &h, sizeof(h), true, deadline))
      util::throw_fatal("alloc_device: socket backend: cannot greet rank ", r,
                        " at ", addrs[r]);
  }
  for (int k = 0; k < me; ++k) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - clock_t_::now())
                          .count();
    pollfd pf{listen_fd_, POLLIN, 0};
    if (left <= 0 || ::poll(&pf, 1, static_cast<int>(left)) <= 0) {
      std::string missing;
      for (int r = 0; r < me; ++r)
        if (peers_[r].fd < 0) missing += " " + std::to_string(r);
      util::throw_fatal("alloc_device: socket backend: ranks", missing,
                        " did not connect within ", cfg_.connect_timeout_s,
                        " s (listening at ", address_, ")");
    }
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) {
        --k;
        continue;
      }
      sys_fail("accept", "");
    }
    hello_t h{};
    if (!exact_io(fd, &h, sizeof(h), false, deadline) ||
        h.magic != kHelloMagic || static_cast<int>(h.rank) >= me ||
        peers_[h.rank].fd >= 0) {
      ::close(fd);
      util::throw_fatal("alloc_device: socket backend: a connection to ",
                        address_,
                        " did not come from a lower rank of this "
                        "job");
    }
    set_nodelay(fd);
    peers_[h.rank].fd = fd;
  }
  ::close(listen_fd_);
  listen_fd_ = -1;
  for (peer_t& p : peers_) {
    p.in.resize(p.self ? 0 : kInBuf);
    if (p.self) continue;
    set_nonblocking(p.fd);
    polled_.push_back(p.rank);
  }
  if (polled_.size() > kDirectPollPeers) {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) sys_fail("epoll_create1", "");
    for (int r : polled_) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = static_cast<uint32_t>(r);
      if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, peers_[r].fd, &ev) != 0)
        sys_fail("epoll_ctl", "");
    }
  }
}

route_caps_t socket_device_t::route(int)
{
  route_caps_t c;
  c.max_copy = cfg_.max_copy;
  c.copies = true;
  return c;
}

void socket_device_t::push_error(cqe_t::kind_t kind, void* ctx, int rank,
                                 const char* why, bool refused)
{
  cqe_t c{};
  c.kind = kind;
  c.ctx = ctx;
  c.error = why;
  c.rank = rank;
  c.refused = refused;
  done_.push_back(c);
}

// Everything pending with the peer fails with its rank; the connection is
// closed so that the peer (if alive) sees it too.
void socket_device_t::fail(peer_t& p, const char* why)
{
  if (p.dead) return;
  p.dead = true;
  p.why = why;
  // the peer's failure itself, reported even when nothing is pending with
  // it (a receive waiting for its message): not after its bye
  if (!p.closing)
    push_error(cqe_t::kind_t::remote_write, nullptr, p.rank, why, false);
  std::deque<cqe_t> lost;
  p.out.drop(&lost);
  for (cqe_t& c : lost) push_error(c.kind, c.ctx, p.rank, why, false);
  for (auto& kv : p.ops)
    push_error(kv.second.kind, kv.second.ctx, p.rank, why, false);
  p.ops.clear();
  if (p.body == body_t::recv) {
    // a message half read into a posted receive: the receive fails
    push_error(cqe_t::kind_t::recv, p.body_ctx, p.rank, why, false);
  }
  p.body = body_t::none;
  p.left = 0;
  if (p.fd >= 0) {
    if (epoll_fd_ >= 0) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, p.fd, nullptr);
    ::close(p.fd);
    p.fd = -1;
  }
  p.head = p.tail = 0;
}

std::string socket_device_t::debug_state()
{
  std::string s = "socket " + address_ + " peers";
  if (!lock_.try_lock()) return s + " (busy)";
  for (const peer_t& p : peers_) {
    if (p.self) continue;
    s += " " + std::to_string(p.rank) + (p.dead ? "(dead)" : "");
    if (!p.out.empty() || p.tail > p.head || !p.ops.empty())
      s += "[out " + std::to_string(p.out.owned_bytes()) + " in " +
           std::to_string(p.tail - p.head) + " ops " +
           std::to_string(p.ops.size()) + "]";
  }
  lock_.unlock();
  return s;
}

}  // namespace lci::net::socket
