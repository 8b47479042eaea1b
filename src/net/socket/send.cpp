// The posts of the socket device (device.hpp).
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "net/socket/device.hpp"

namespace lci::net::socket
{
namespace
{

const char* send_error(int err)
{
  switch (err) {
    case EPIPE:
    case ECONNRESET:
      return "socket backend: the peer's connection was reset";
    case ETIMEDOUT:
    case EHOSTUNREACH:
      return "socket backend: the peer's host is unreachable";
    default:
      return "socket backend: a send to the peer failed";
  }
}

struct try_guard_t {
  util::spinlock_t& l;
  bool ok;
  explicit try_guard_t(util::spinlock_t& lk) : l(lk), ok(lk.try_lock()) {}
  ~try_guard_t()
  {
    if (ok) l.unlock();
  }
};

}  // namespace

void socket_device_t::flush(peer_t& p)
{
  if (p.dead || p.out.empty()) return;
  const uint64_t before = p.out.written();
  const int err = p.out.flush(p.fd, &done_);
  moved_ += p.out.written() - before;
  if (err) fail(p, send_error(err));
}

bool socket_device_t::emit(peer_t& p, struct iovec* iov, int n,
                           const void* borrow, size_t blen, const cqe_t* done)
{
  if (p.self) {
    // to itself: straight into its own input buffer
    size_t total = blen;
    for (int i = 0; i < n; ++i) total += iov[i].iov_len;
    if (p.head == p.tail) p.head = p.tail = 0;
    if (p.tail + total > p.in.size()) p.in.resize(p.tail + total);
    for (int i = 0; i < n; ++i) {
      std::memcpy(p.in.data() + p.tail, iov[i].iov_base, iov[i].iov_len);
      p.tail += iov[i].iov_len;
    }
    if (blen) std::memcpy(p.in.data() + p.tail, borrow, blen);
    p.tail += blen;
    return true;
  }
  size_t written = 0;
  int err = 0;
  const bool direct = p.out.empty();
  if (direct) {
    struct iovec all[4];
    size_t total = 0;
    for (int i = 0; i < n; ++i) {
      all[i] = iov[i];
      total += iov[i].iov_len;
    }
    int m = n;
    if (blen) {
      all[m++] = {const_cast<void*>(borrow), blen};
      total += blen;
    }
    struct msghdr msg {
    };
    msg.msg_iov = all;
    msg.msg_iovlen = static_cast<size_t>(m);
    ssize_t w;
    do {
      w = ::sendmsg(p.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (w < 0 && errno == EINTR);
    if (w < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) err = errno;
      w = 0;
    }
    written = static_cast<size_t>(w);
    if (written == total) return true;
  }
  // queue what the socket did not take: the rest of the copied pieces,
  // then the borrowed buffer's rest
  struct iovec rest[4];
  int k = 0;
  size_t skip = written;
  for (int i = 0; i < n; ++i) {
    if (skip >= iov[i].iov_len) {
      skip -= iov[i].iov_len;
      continue;
    }
    rest[k++] = {static_cast<char*>(iov[i].iov_base) + skip,
                 iov[i].iov_len - skip};
    skip = 0;
  }
  p.out.append_copy(rest, k);
  if (blen)
    p.out.append_borrowed(static_cast<const char*>(borrow) + skip, blen - skip,
                          done);
  // a failed connection fails what was just queued with the rest
  if (err)
    fail(p, send_error(err));
  else if (!direct)
    flush(p);
  return false;
}

error_t socket_device_t::post_dead(peer_t& p, cqe_t::kind_t kind, void* ctx)
{
  push_error(kind, ctx, p.rank, p.why, false);
  return errorcode_t::posted;
}

error_t socket_device_t::send_copy(int rank, const void* head, size_t hlen,
                                   const void* tail, size_t tlen)
{
  try_guard_t g(lock_);
  if (!g.ok) return errorcode_t::retry_lock;
  peer_t& p = peers_[rank];
  // a dead peer's failure is reported already (fail): the message is lost
  if (p.dead) return errorcode_t::done;
  if (p.out.owned_bytes() > kOutMax) {
    flush(p);
    if (p.out.owned_bytes() > kOutMax) return errorcode_t::retry_nomem;
  }
  hdr_t h{static_cast<uint32_t>(hlen + tlen),
          static_cast<uint8_t>(frame_t::msg),
          {}};
  struct iovec iov[3] = {{&h, sizeof(h)},
                         {const_cast<void*>(head), hlen},
                         {const_cast<void*>(tail), tlen}};
  emit(p, iov, tlen ? 3 : 2, nullptr, 0, nullptr);
  return errorcode_t::done;
}

error_t socket_device_t::post_send(int rank, const void* buf, size_t size,
                                   void* ctx)
{
  try_guard_t g(lock_);
  if (!g.ok) return errorcode_t::retry_lock;
  peer_t& p = peers_[rank];
  if (p.dead) return post_dead(p, cqe_t::kind_t::send, ctx);
  hdr_t h{static_cast<uint32_t>(size), static_cast<uint8_t>(frame_t::msg), {}};
  struct iovec iov[1] = {{&h, sizeof(h)}};
  cqe_t done{};
  done.kind = cqe_t::kind_t::send;
  done.ctx = ctx;
  // not all written: queued, or failed with the connection (fail)
  if (emit(p, iov, 1, buf, size, &done)) return errorcode_t::done;
  return errorcode_t::posted;
}

// The send cqe comes when the target's device has delivered the message
// (msg_acked, answered by ack): delivery completion.
error_t socket_device_t::post_send_network(int rank, const void* buf,
                                           size_t size, void* ctx)
{
  try_guard_t g(lock_);
  if (!g.ok) return errorcode_t::retry_lock;
  peer_t& p = peers_[rank];
  if (p.dead) return post_dead(p, cqe_t::kind_t::send, ctx);
  uint64_t id = next_id_++;
  p.ops[id] = op_t{cqe_t::kind_t::send, ctx, nullptr, size};
  hdr_t h{static_cast<uint32_t>(sizeof(id) + size),
          static_cast<uint8_t>(frame_t::msg_acked),
          {}};
  struct iovec iov[2] = {{&h, sizeof(h)}, {&id, sizeof(id)}};
  emit(p, iov, 2, buf, size, nullptr);
  return errorcode_t::posted;
}

error_t socket_device_t::post_recv(void* buf, size_t size, void* ctx)
{
  util::spin_guard_t g(recv_lock_);
  recvs_.push_back(recv_t{buf, size, ctx});
  return errorcode_t::posted;
}

// Writes and reads wait for the target's answer (ack, nack or read_resp):
// the write cqe says the data is in the target's memory, whether asked
// (`delivered`) or not, and a refused key comes back as an error.
error_t socket_device_t::post_rma(int rank, frame_t type, const void* buf,
                                  size_t size, const remote_t& remote,
                                  uint64_t arg, void* ctx)
{
  try_guard_t g(lock_);
  if (!g.ok) return errorcode_t::retry_lock;
  peer_t& p = peers_[rank];
  const bool read = type == frame_t::read_req;
  const cqe_t::kind_t kind = read ? cqe_t::kind_t::read : cqe_t::kind_t::write;
  if (p.dead) return post_dead(p, kind, ctx);
  if (size == 0 || size >= kMaxFrame) {
    push_error(kind, ctx, -1, "socket backend: RMA size out of range", false);
    return errorcode_t::posted;
  }
  const uint64_t id = next_id_++;
  p.ops[id] =
      op_t{kind, ctx,
           read ? static_cast<char*>(const_cast<void*>(buf)) : nullptr, size};
  rma_t x{remote.rkey, remote.base + remote.disp, read ? size : arg, id};
  hdr_t h{static_cast<uint32_t>(sizeof(x) + (read ? 0 : size)),
          static_cast<uint8_t>(type),
          {}};
  struct iovec iov[2] = {{&h, sizeof(h)}, {&x, sizeof(x)}};
  emit(p, iov, 2, read ? nullptr : buf, read ? 0 : size, nullptr);
  return errorcode_t::posted;
}

error_t socket_device_t::post_write(int rank, const void* buf, size_t size,
                                    void*, const remote_t& remote, void* ctx,
                                    bool)
{
  return post_rma(rank, frame_t::write, buf, size, remote, 0, ctx);
}

error_t socket_device_t::post_writeimm(int rank, const void* buf, size_t size,
                                       void*, const remote_t& remote,
                                       uint64_t imm, void* ctx)
{
  return post_rma(rank, frame_t::writeimm, buf, size, remote, imm, ctx);
}

error_t socket_device_t::post_read(int rank, void* buf, size_t size, void*,
                                   const remote_t& remote, void* ctx)
{
  return post_rma(rank, frame_t::read_req, buf, size, remote, 0, ctx);
}

}  // namespace lci::net::socket
