// The tcp backend: ranks started without a process manager, each told its
// RANK and WORLD_SIZE and one rendezvous address, the way upstream LCI 2's
// tcp bootstrap and torchrun start them (docs/LAUNCHING.md). Rank 0 listens
// at the address; every other rank connects and says who it is. Rank 0 is
// then the hub of every collective: it reads each rank's contribution, in
// rank order, and sends the whole result back to each. A barrier is an
// allgather of one byte. No thread runs in the background: all traffic
// happens inside the collective calls, and every wait is bounded.
//
// The wire format is this library's own (every rank runs it): a hello of
// three 32-bit words (magic, rank, size) answered by one byte, then per
// collective a 64-bit length and the bytes from each rank, and the gathered
// bytes back.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "pmi_wire.hpp"

namespace lci::bootstrap
{

namespace
{

using clock_type = std::chrono::steady_clock;

constexpr std::uint32_t kMagic = 0x4c434954;  // "LCIT"
constexpr unsigned kDefaultTimeout = 60;      // upstream's default too

[[noreturn]] void fail(const std::string& what)
{
  throw std::runtime_error("lci bootstrap (tcp): " + what);
}

const char* env(const char* name)
{
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? value : nullptr;
}

long long env_int(const char* name, long long lo, long long hi)
{
  const char* text = env(name);
  long long value = -1;
  if (text == nullptr || !pmi_wire::parse_int(text, &value) || value < lo ||
      value > hi)
    fail(std::string(name) + "='" + (text ? text : "") +
         "' is not an integer in [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "]");
  return value;
}

class tcp_backend_t final : public backend_t
{
 public:
  tcp_backend_t()
  {
    rank_ = static_cast<int>(env_int("RANK", 0, INT32_MAX - 1));
    size_ = static_cast<int>(env_int("WORLD_SIZE", 1, INT32_MAX));
    if (rank_ >= size_)
      fail("RANK=" + std::to_string(rank_) +
           " is not below WORLD_SIZE=" + std::to_string(size_));
    tcp_endpoint_t ep;
    if (!find_tcp_endpoint(&ep))
      fail("no rendezvous address: " + std::string(kTcpEndpointHelp));
    addr_ = ep.addr;
    port_ = ep.port;
    where_ = std::string(ep.addr_name) + "=" + addr_ + " " + ep.port_name +
             "=" + port_;
    long long port = -1;
    if (!pmi_wire::parse_int(port_.c_str(), &port) || port < 1 || port > 65535)
      fail(std::string(ep.port_name) + "='" + port_ +
           "' is not a port number (1-65535)");
    timeout_ = env("LCT_PMI_TCP_TIMEOUT_SEC")
                   ? static_cast<unsigned>(
                         env_int("LCT_PMI_TCP_TIMEOUT_SEC", 0, 86400))
                   : kDefaultTimeout;
    if (rank_ == 0)
      accept_all();
    else
      join();
  }

  ~tcp_backend_t() override
  {
    for (int fd : fds_)
      if (fd >= 0) ::close(fd);
  }

  const char* name() const override { return "tcp"; }
  int rank_me() const override { return rank_; }
  int rank_n() const override { return size_; }
  // The runtime passes its bootstrap_timeout, 0 unless the program set it:
  // 0 keeps LCT_PMI_TCP_TIMEOUT_SEC (or its default), since a rank that
  // never connects would otherwise be waited for forever.
  void set_timeout(unsigned seconds) override
  {
    if (seconds != 0) timeout_ = seconds;
  }

  void allgather(const void* in, void* out, std::size_t size) override
  {
    auto deadline = make_deadline();
    char* o = static_cast<char*>(out);
    if (rank_ != 0) {
      std::uint64_t len = size;
      send_all(fds_[0], &len, sizeof(len), deadline, 0);
      send_all(fds_[0], in, size, deadline, 0);
      recv_all(fds_[0], o, size * size_, deadline, 0);
      return;
    }
    if (size) std::memmove(o, in, size);  // (an empty allgather may pass null)
    for (int r = 1; r < size_; ++r) {
      std::uint64_t len = 0;
      recv_all(fds_[r], &len, sizeof(len), deadline, r);
      if (len != size)
        fail("rank " + std::to_string(r) + " contributes " +
             std::to_string(len) + " bytes to an allgather of " +
             std::to_string(size) + " (the ranks' collectives differ)");
      recv_all(fds_[r], o + size * r, size, deadline, r);
    }
    for (int r = 1; r < size_; ++r)
      send_all(fds_[r], o, size * size_, deadline, r);
  }

  void barrier() override
  {
    std::vector<char> out(size_);
    char in = 1;
    allgather(&in, out.data(), 1);
  }

 private:
  struct deadline_t {
    bool forever;
    clock_type::time_point at;
  };

  deadline_t make_deadline() const
  {
    unsigned t = timeout_.load();
    return {t == 0, clock_type::now() + std::chrono::seconds(t)};
  }

  // Milliseconds left for poll (-1: forever); throws when none are left.
  int left_ms(const deadline_t& d, const std::string& waiting_for) const
  {
    if (d.forever) return -1;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  d.at - clock_type::now())
                  .count();
    if (ms <= 0)
      fail("timed out after " + std::to_string(timeout_.load()) +
           " s (LCT_PMI_TCP_TIMEOUT_SEC or the runtime's bootstrap_timeout) "
           "waiting for " +
           waiting_for + " [" + where_ + "]");
    return ms > INT32_MAX ? INT32_MAX : static_cast<int>(ms);
  }

  std::string peer(int r) const
  {
    return rank_ == 0 ? "rank " + std::to_string(r) : "rank 0 (" + where_ + ")";
  }

  void wait_fd(int fd, short events, const deadline_t& d,
               const std::string& what) const
  {
    for (;;) {
      pollfd p{fd, events, 0};
      int rc = ::poll(&p, 1, left_ms(d, what));
      if (rc > 0) return;
      if (rc < 0 && errno != EINTR)
        fail("poll: " + std::string(strerror(errno)));
    }
  }

  void send_all(int fd, const void* buf, std::size_t n, const deadline_t& d,
                int r) const
  {
    const char* p = static_cast<const char*>(buf);
    while (n > 0) {
      ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k > 0) {
        p += k;
        n -= static_cast<std::size_t>(k);
      } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wait_fd(fd, POLLOUT, d, peer(r) + " to take data");
      } else if (k < 0 && errno != EINTR) {
        fail("sending to " + peer(r) + ": " + strerror(errno) +
             " (did it exit?)");
      }
    }
  }

  void recv_all(int fd, void* buf, std::size_t n, const deadline_t& d,
                int r) const
  {
    char* p = static_cast<char*>(buf);
    while (n > 0) {
      ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
      if (k > 0) {
        p += k;
        n -= static_cast<std::size_t>(k);
      } else if (k == 0) {
        fail(peer(r) + " closed its connection (it exited or failed)");
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        wait_fd(fd, POLLIN, d, peer(r));
      } else if (errno != EINTR) {
        fail("receiving from " + peer(r) + ": " + strerror(errno));
      }
    }
  }

  addrinfo* resolve(bool passive) const
  {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (passive) hints.ai_flags = AI_PASSIVE;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(addr_.c_str(), port_.c_str(), &hints, &res);
    if (rc != 0) fail("cannot resolve " + where_ + ": " + gai_strerror(rc));
    return res;
  }

  // Rank 0: listen at the rendezvous address and take one connection from
  // every other rank.
  void accept_all()
  {
    fds_.assign(size_, -1);
    if (size_ == 1) return;
    auto deadline = make_deadline();
    addrinfo* res = resolve(true);
    int lfd = -1;
    std::string why = "no address";
    for (addrinfo* a = res; a && lfd < 0; a = a->ai_next) {
      lfd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
      if (lfd < 0) continue;
      int one = 1;
      ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (::bind(lfd, a->ai_addr, a->ai_addrlen) != 0 ||
          ::listen(lfd, size_) != 0) {
        why = strerror(errno);
        ::close(lfd);
        lfd = -1;
      }
    }
    ::freeaddrinfo(res);
    if (lfd < 0) fail("rank 0 cannot listen at " + where_ + ": " + why);
    int joined = 1;
    try {
      while (joined < size_) {
        wait_fd(lfd, POLLIN, deadline,
                std::to_string(size_ - joined) + " of " +
                    std::to_string(size_ - 1) + " ranks to connect");
        int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        std::uint32_t hello[3] = {0, 0, 0};
        try {
          recv_all(fd, hello, sizeof(hello), deadline, -1);
        } catch (const std::runtime_error&) {
          ::close(fd);  // not one of ours (a port scan): keep waiting
          continue;
        }
        int r = static_cast<int>(hello[1]);
        if (hello[0] != kMagic) {
          ::close(fd);
          continue;
        }
        if (static_cast<int>(hello[2]) != size_ || r <= 0 || r >= size_ ||
            fds_[r] >= 0) {
          ::close(fd);
          fail("a rank connected saying RANK=" + std::to_string(r) +
               " WORLD_SIZE=" + std::to_string(hello[2]) + ", but this job " +
               "has WORLD_SIZE=" + std::to_string(size_) +
               (r > 0 && r < size_ && fds_[r] >= 0 ? " and that rank joined"
                                                   : "") +
               " (two jobs on one rendezvous address?)");
        }
        set_nodelay(fd);
        fds_[r] = fd;
        ++joined;
      }
    } catch (...) {
      ::close(lfd);
      throw;
    }
    ::close(lfd);
    char ok = 1;
    for (int r = 1; r < size_; ++r) send_all(fds_[r], &ok, 1, deadline, r);
  }

  // Other ranks: connect to rank 0 (retrying until it listens) and wait
  // until every rank joined.
  void join()
  {
    fds_.assign(1, -1);
    auto deadline = make_deadline();
    std::string why;
    while (fds_[0] < 0) {
      addrinfo* res = resolve(false);
      for (addrinfo* a = res; a && fds_[0] < 0; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          fds_[0] = fd;
        } else {
          why = strerror(errno);
          ::close(fd);
        }
      }
      ::freeaddrinfo(res);
      if (fds_[0] >= 0) break;
      left_ms(deadline, "rank 0 to listen (last error: " + why + ")");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    set_nodelay(fds_[0]);
    std::uint32_t hello[3] = {kMagic, static_cast<std::uint32_t>(rank_),
                              static_cast<std::uint32_t>(size_)};
    send_all(fds_[0], hello, sizeof(hello), deadline, 0);
    char ok = 0;
    recv_all(fds_[0], &ok, 1, deadline, 0);
  }

  static void set_nodelay(int fd)
  {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }

  int rank_ = -1;
  int size_ = 0;
  std::string addr_, port_, where_;
  std::atomic<unsigned> timeout_{kDefaultTimeout};
  // rank 0: the connection of each other rank (its own slot -1);
  // others: the connection to rank 0 alone
  std::vector<int> fds_;
};

}  // namespace

const char* const kTcpEndpointHelp =
    "set RANK, WORLD_SIZE and one matched pair LCT_MASTER_ADDR and "
    "LCT_MASTER_PORT, LCI_MASTER_ADDR and LCI_MASTER_PORT, or MASTER_ADDR "
    "and MASTER_PORT (first complete pair in that order; pairs are never "
    "mixed)";

bool find_tcp_endpoint(tcp_endpoint_t* ep)
{
  static const char* const kPairs[3][2] = {
      {"LCT_MASTER_ADDR", "LCT_MASTER_PORT"},
      {"LCI_MASTER_ADDR", "LCI_MASTER_PORT"},
      {"MASTER_ADDR", "MASTER_PORT"}};
  for (const auto& pair : kPairs) {
    const char* addr = env(pair[0]);
    const char* port = env(pair[1]);
    if (addr && port) {
      *ep = {pair[0], pair[1], addr, port};
      return true;
    }
  }
  return false;
}

std::unique_ptr<backend_t> make_tcp_backend()
{
  return std::make_unique<tcp_backend_t>();
}

}  // namespace lci::bootstrap
