// The "pmi1" bootstrap backend: a client of the PMI-1 wire protocol as
// spoken by MPICH's hydra (mpiexec.hydra) and by our lcrun.
//
// Connection: the launcher passes a connected stream socket in PMI_FD, or
// (hydra's port mode) "host:port" in PMI_PORT to connect to. Requests and
// replies are single "key=value ..." lines ending in "\n", exchanged in
// lock-step:
//   [cmd=initack pmiid=ID  -> cmd=initack, cmd=set size=/rank=/debug=]  port
//   cmd=init pmi_version=1 pmi_subversion=1 -> cmd=response_to_init rc=0
//   cmd=get_maxes          -> cmd=maxes kvsname_max= keylen_max= vallen_max=
//   cmd=get_my_kvsname     -> cmd=my_kvsname kvsname=
//   cmd=put kvsname= key= value=  -> cmd=put_result rc=0
//   cmd=barrier_in         -> cmd=barrier_out
//   cmd=get kvsname= key=  -> cmd=get_result rc=0 value=
//   cmd=finalize           -> cmd=finalize_ack
//
// allgather: blobs are hex-encoded and split into chunks that fit one value
// (and one 1024-byte line); each call uses keys "lci<seq>-<rank>-<chunk>"
// with a process-wide sequence number, so keys are never reused.
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "backends.hpp"
#include "pmi_wire.hpp"

namespace lci::bootstrap
{
namespace
{

// Requests are kept within this many bytes (the line buffer size of the
// classic simple-PMI implementations).
constexpr std::size_t kMaxLine = 1024;
// Bounds the reply buffer in case the peer is not a PMI server.
constexpr std::size_t kMaxReply = 1 << 20;

// Sequence number of allgather calls, shared by all backend instances of
// this process so that a re-created backend never reuses a key.
std::atomic<unsigned long> g_allgather_seq{0};

[[noreturn]] void fail(const std::string& what)
{
  throw std::runtime_error("lci bootstrap (pmi1): " + what);
}

// Shortens long requests (put values) for error messages.
std::string brief(const std::string& request)
{
  if (request.size() <= 120) return "'" + request + "'";
  return "'" + request.substr(0, 117) + "...'";
}

long long env_int(const char* name, long long min, long long max)
{
  const char* text = std::getenv(name);
  if (text == nullptr || text[0] == '\0') {
    fail(std::string(name) + " is not set");
  }
  long long value = 0;
  if (!pmi_wire::parse_int(text, &value) || value < min || value > max) {
    fail(std::string(name) + "='" + text + "' is not an integer in [" +
         std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return value;
}

// Connects to "host:port" (PMI_PORT). The host may be "[v6-address]".
int connect_port(const std::string& spec)
{
  std::size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) {
    fail("PMI_PORT='" + spec + "' is not of the form host:port");
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
    fail("PMI_PORT='" + spec + "': cannot resolve: " + gai_strerror(rc));
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
    fail("PMI_PORT='" + spec +
         "': cannot connect: " + std::strerror(last_errno));
  }
  return fd;
}

std::string to_hex(const void* data, std::size_t size)
{
  static const char digits[] = "0123456789abcdef";
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string hex(2 * size, '0');
  for (std::size_t i = 0; i < size; ++i) {
    hex[2 * i] = digits[bytes[i] >> 4];
    hex[2 * i + 1] = digits[bytes[i] & 0xf];
  }
  return hex;
}

int hex_digit(char c)
{
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes `hex` into exactly `size` bytes; false if malformed.
bool from_hex(const std::string& hex, void* out, std::size_t size)
{
  if (hex.size() != 2 * size) return false;
  auto* bytes = static_cast<unsigned char*>(out);
  for (std::size_t i = 0; i < size; ++i) {
    int hi = hex_digit(hex[2 * i]);
    int lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    bytes[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return true;
}

class pmi1_backend_t final : public backend_t
{
 public:
  pmi1_backend_t();
  ~pmi1_backend_t() override;
  pmi1_backend_t(const pmi1_backend_t&) = delete;
  pmi1_backend_t& operator=(const pmi1_backend_t&) = delete;

  const char* name() const override { return "pmi1"; }
  int rank_me() const override { return rank_; }
  int rank_n() const override { return size_; }
  void allgather(const void* in, void* out, std::size_t size) override;
  void barrier() override;

 private:
  void connect_and_init();
  void initack(long long id);
  void send_line(const std::string& line);
  std::string read_line(const std::string& request);
  // Reads one reply to `request`, checks its cmd and rc.
  pmi_wire::message_t expect(const std::string& request,
                             const std::string& reply_cmd);
  // Sends `request` and returns its checked reply.
  pmi_wire::message_t call(const std::string& request,
                           const std::string& reply_cmd);
  long long reply_int(const pmi_wire::message_t& reply, const char* key,
                      const std::string& request, long long fallback);
  std::string make_key(unsigned long seq, int rank, std::size_t chunk) const;

  int fd_ = -1;
  bool own_fd_ = false;  // we connected it (PMI_PORT): close on destruction
  std::string inbuf_;
  int rank_ = -1;
  int size_ = 0;
  std::string kvsname_;
  std::size_t keylen_max_ = 0;
  std::size_t chunk_len_ = 0;  // hex characters per put value
};

pmi1_backend_t::pmi1_backend_t()
{
  try {
    connect_and_init();
  } catch (...) {
    if (own_fd_ && fd_ >= 0) close(fd_);
    throw;
  }
}

void pmi1_backend_t::connect_and_init()
{
  const char* fd_env = std::getenv("PMI_FD");
  const char* port_env = std::getenv("PMI_PORT");
  if (fd_env != nullptr && fd_env[0] != '\0') {
    fd_ = static_cast<int>(env_int("PMI_FD", 0, INT_MAX));
    if (fcntl(fd_, F_GETFD) < 0) {
      fail(std::string("PMI_FD='") + fd_env +
           "' is not an open file descriptor");
    }
  } else if (port_env != nullptr && port_env[0] != '\0') {
    fd_ = connect_port(port_env);
    own_fd_ = true;
  } else {
    fail("neither PMI_FD nor PMI_PORT is set (not started by a PMI launcher)");
  }
  // Programs we exec must not inherit the connection.
  fcntl(fd_, F_SETFD, FD_CLOEXEC);

  const char* id_env = std::getenv("PMI_ID");
  if (own_fd_ && id_env != nullptr && id_env[0] != '\0') {
    initack(env_int("PMI_ID", 0, INT_MAX));
  } else {
    size_ = static_cast<int>(env_int("PMI_SIZE", 1, INT_MAX));
    rank_ = static_cast<int>(env_int("PMI_RANK", 0, size_ - 1));
  }

  std::string request = "cmd=init pmi_version=1 pmi_subversion=1";
  pmi_wire::message_t reply = call(request, "response_to_init");
  std::string version = pmi_wire::get(reply, "pmi_version", "1");
  if (version != "1") {
    fail(brief(request) + " answered pmi_version=" + version +
         " (only PMI-1 is supported)");
  }

  request = "cmd=get_maxes";
  reply = call(request, "maxes");
  // Defaults when a server omits the values: the minimums from the PMI docs.
  long long kvsname_max = reply_int(reply, "kvsname_max", request, 16);
  keylen_max_ =
      static_cast<std::size_t>(reply_int(reply, "keylen_max", request, 32));
  long long vallen_max = reply_int(reply, "vallen_max", request, 64);
  if (keylen_max_ < 8 || vallen_max < 2) {
    fail(brief(request) +
         " answered keylen_max=" + std::to_string(keylen_max_) +
         " vallen_max=" + std::to_string(vallen_max) + ", too small");
  }

  request = "cmd=get_my_kvsname";
  reply = call(request, "my_kvsname");
  kvsname_ = pmi_wire::get(reply, "kvsname");
  if (kvsname_.empty() ||
      static_cast<long long>(kvsname_.size()) >= kvsname_max) {
    fail(brief(request) + " answered kvsname='" + kvsname_ + "'");
  }

  // A value must fit vallen_max (with its NUL) and the whole put line must
  // fit kMaxLine: "cmd=put kvsname=K key=KEY value=V".
  std::size_t overhead = std::strlen("cmd=put kvsname= key= value=") +
                         kvsname_.size() + keylen_max_;
  std::size_t line_room = overhead + 64 < kMaxLine ? kMaxLine - overhead : 64;
  chunk_len_ = std::min(static_cast<std::size_t>(vallen_max - 1), line_room);
}

// Port mode (hydra -pmi-port): announce our PMI_ID; the server answers
// "cmd=initack" followed by "cmd=set size=N", "cmd=set rank=R" and
// "cmd=set debug=D" lines.
void pmi1_backend_t::initack(long long id)
{
  std::string request = "cmd=initack pmiid=" + std::to_string(id);
  call(request, "initack");
  bool have_debug = false;
  while (size_ <= 0 || rank_ < 0 || !have_debug) {
    pmi_wire::message_t reply = expect(request, "set");
    if (reply.count("size")) {
      size_ = static_cast<int>(reply_int(reply, "size", request, 0));
    }
    if (reply.count("rank")) {
      rank_ = static_cast<int>(reply_int(reply, "rank", request, -1));
    }
    if (reply.count("debug")) have_debug = true;
  }
  if (size_ < 1 || rank_ < 0 || rank_ >= size_) {
    fail(brief(request) + " answered rank=" + std::to_string(rank_) +
         " size=" + std::to_string(size_));
  }
}

pmi1_backend_t::~pmi1_backend_t()
{
  try {
    call("cmd=finalize", "finalize_ack");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s (ignored while finalizing)\n", e.what());
  }
  // A PMI_FD is left open: lcrun accepts a new "cmd=init" on it if the
  // process creates a backend again.
  if (own_fd_) close(fd_);
}

void pmi1_backend_t::send_line(const std::string& line)
{
  std::string data = line + "\n";
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) {
      n = write(fd_, data.data() + done, data.size() - done);
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      fail("cannot send " + brief(line) +
           " to the process manager: " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
}

std::string pmi1_backend_t::read_line(const std::string& request)
{
  while (true) {
    std::size_t newline = inbuf_.find('\n');
    if (newline != std::string::npos) {
      std::string line = inbuf_.substr(0, newline);
      inbuf_.erase(0, newline + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      return line;
    }
    if (inbuf_.size() > kMaxReply) {
      fail("reply to " + brief(request) + " exceeds " +
           std::to_string(kMaxReply) + " bytes without a newline");
    }
    char buf[4096];
    ssize_t n = read(fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      fail(
          "lost the connection to the process manager while waiting for "
          "the reply to " +
          brief(request));
    }
    if (n < 0) {
      fail("cannot read the reply to " + brief(request) + ": " +
           std::strerror(errno));
    }
    inbuf_.append(buf, static_cast<std::size_t>(n));
  }
}

pmi_wire::message_t pmi1_backend_t::expect(const std::string& request,
                                           const std::string& reply_cmd)
{
  std::string line = read_line(request);
  pmi_wire::message_t reply = pmi_wire::parse(line);
  if (pmi_wire::get(reply, "cmd") != reply_cmd) {
    fail("unexpected reply '" + line + "' to " + brief(request) +
         " (expected cmd=" + reply_cmd + ")");
  }
  std::string rc = pmi_wire::get(reply, "rc", "0");
  long long rc_value = 0;
  if (!pmi_wire::parse_int(rc, &rc_value) || rc_value != 0) {
    std::string msg = pmi_wire::get(reply, "msg");
    fail(brief(request) + " failed: rc=" + rc +
         (msg.empty() ? "" : " msg=" + msg));
  }
  return reply;
}

pmi_wire::message_t pmi1_backend_t::call(const std::string& request,
                                         const std::string& reply_cmd)
{
  send_line(request);
  return expect(request, reply_cmd);
}

long long pmi1_backend_t::reply_int(const pmi_wire::message_t& reply,
                                    const char* key, const std::string& request,
                                    long long fallback)
{
  auto it = reply.find(key);
  if (it == reply.end()) return fallback;
  long long value = 0;
  if (!pmi_wire::parse_int(it->second, &value) || value < INT_MIN ||
      value > INT_MAX) {
    fail(brief(request) + " answered " + key + "='" + it->second +
         "', not an integer");
  }
  return value;
}

std::string pmi1_backend_t::make_key(unsigned long seq, int rank,
                                     std::size_t chunk) const
{
  std::string key = "lci" + std::to_string(seq) + "-" + std::to_string(rank) +
                    "-" + std::to_string(chunk);
  if (key.size() + 1 > keylen_max_) {
    fail("key '" + key + "' exceeds keylen_max=" + std::to_string(keylen_max_));
  }
  return key;
}

void pmi1_backend_t::allgather(const void* in, void* out, std::size_t size)
{
  unsigned long seq = g_allgather_seq.fetch_add(1);
  // Encode first: `in` may alias part of `out`.
  std::string mine = to_hex(in, size);
  std::size_t nchunks = (mine.size() + chunk_len_ - 1) / chunk_len_;
  for (std::size_t c = 0; c < nchunks; ++c) {
    call("cmd=put kvsname=" + kvsname_ + " key=" + make_key(seq, rank_, c) +
             " value=" + mine.substr(c * chunk_len_, chunk_len_),
         "put_result");
  }
  barrier();
  auto* dest = static_cast<unsigned char*>(out);
  for (int r = 0; r < size_; ++r) {
    std::string hex;
    if (r == rank_) {
      hex = mine;
    } else {
      for (std::size_t c = 0; c < nchunks; ++c) {
        std::string request =
            "cmd=get kvsname=" + kvsname_ + " key=" + make_key(seq, r, c);
        hex += pmi_wire::get(call(request, "get_result"), "value");
      }
    }
    if (!from_hex(hex, dest + static_cast<std::size_t>(r) * size, size)) {
      fail("allgather #" + std::to_string(seq) + ": rank " + std::to_string(r) +
           " published " + std::to_string(hex.size()) +
           " hex characters, expected " + std::to_string(2 * size));
    }
  }
}

void pmi1_backend_t::barrier() { call("cmd=barrier_in", "barrier_out"); }

}  // namespace

std::unique_ptr<backend_t> make_pmi1_backend()
{
  return std::make_unique<pmi1_backend_t>();
}

}  // namespace lci::bootstrap
