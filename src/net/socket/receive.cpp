// The receive side of the socket device (device.hpp): poll_comp, reading
// and parsing each peer's frames.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "net/socket/device.hpp"

namespace lci::net::socket
{
namespace
{

const char* recv_error(ssize_t n, int err)
{
  if (n == 0) return "socket backend: the peer closed its connection";
  if (err == ECONNRESET)
    return "socket backend: the peer's connection was reset";
  if (err == ETIMEDOUT || err == EHOSTUNREACH)
    return "socket backend: the peer's host is unreachable";
  return "socket backend: a receive from the peer failed";
}

constexpr size_t align16(size_t n) { return (n + 15) & ~size_t(15); }

// A frame made of a header and an 8-byte id (and maybe a body): the id,
// and the head moved past both; false when the id has not all come.
bool take_id(size_t* head, size_t avail, const char* body, uint64_t* id)
{
  if (avail < sizeof(*id)) return false;
  std::memcpy(id, body, sizeof(*id));
  *head += sizeof(hdr_t) + sizeof(*id);
  return true;
}

}  // namespace

// Where one poll's completions go.
struct socket_device_t::sink_t {
  cqe_t* out;
  size_t max, n;
  char* scratch;
  size_t scratch_size, scratch_used;
  bool full() const { return n == max; }
  cqe_t& next()
  {
    cqe_t& c = out[n++];
    c = cqe_t();
    return c;
  }
};

size_t socket_device_t::poll_comp(cqe_t* out, size_t max, char* scratch,
                                  size_t scratch_size)
{
  if (max == 0 || !lock_.try_lock()) return 0;
  const uint64_t moved = moved_;
  sink_t s{out, max, 0, scratch, scratch ? scratch_size : 0, 0};
  while (!done_.empty() && !s.full()) {
    out[s.n++] = done_.front();
    done_.pop_front();
  }
  peer_t& self = peers_[cfg_.rank_me];
  if (self.tail > self.head) progress_in(self, s);
  if (epoll_fd_ < 0) {
    for (int r : polled_) {
      peer_t& p = peers_[r];
      flush(p);
      progress_in(p, s);
    }
  } else {
    for (int r : polled_) {
      peer_t& p = peers_[r];
      flush(p);
      if (p.tail > p.head) progress_in(p, s);
    }
    epoll_event ev[64];
    const int k = s.full() ? 0 : ::epoll_wait(epoll_fd_, ev, 64, 0);
    for (int i = 0; i < k; ++i) progress_in(peers_[ev[i].data.u32], s);
  }
  // completions that the parsing made outside the sink (a failure)
  while (!done_.empty() && !s.full()) {
    out[s.n++] = done_.front();
    done_.pop_front();
  }
  if (s.n > 0 || moved_ != moved || !stalled()) {
    stalls_ = 0;
  } else if (++stalls_ >= kStallPolls) {
    stalls_ = 0;
    sleep_unlock();
    return 0;
  }
  lock_.unlock();
  return s.n;
}

// Whether only the kernel can move this device's transfers on: a peer's
// output queue waits for room, or a payload has begun to arrive.
bool socket_device_t::stalled() const
{
  if (cfg_.wait_us == 0) return false;
  for (int r : polled_) {
    const peer_t& p = peers_[r];
    if (!p.dead && (!p.out.empty() || p.body != body_t::none)) return true;
  }
  return false;
}

// Sleeps until a peer's socket is readable, or writable where its queue
// waits, for at most wait_us, with the lock released so that other threads
// post and poll meanwhile. A connection another thread fails meanwhile
// (its fd closed) at worst ends or lengthens this one sleep.
void socket_device_t::sleep_unlock()
{
  std::vector<pollfd> fds;
  fds.reserve(polled_.size());
  for (int r : polled_) {
    const peer_t& p = peers_[r];
    if (p.dead) continue;
    const short ev = static_cast<short>(POLLIN | (p.out.empty() ? 0 : POLLOUT));
    fds.push_back(pollfd{p.fd, ev, 0});
  }
  lock_.unlock();
  const timespec ts{static_cast<time_t>(cfg_.wait_us / 1000000),
                    static_cast<long>(cfg_.wait_us % 1000000) * 1000};
  ::ppoll(fds.data(), fds.size(), &ts, nullptr);
}

// Frames of `p` until the sink is full, a frame waits for a receive buffer,
// or the socket has nothing more now. A recv that returns less than it
// asked for means the kernel had no more: no second recv in this poll.
void socket_device_t::progress_in(peer_t& p, sink_t& s)
{
  p.blocked = false;
  bool can_read = !p.self;
  while (!s.full() && !p.dead) {
    if (p.body != body_t::none) {
      if (!continue_body(p, s)) return;
      continue;
    }
    if (p.tail - p.head >= sizeof(hdr_t)) {
      if (parse_one(p, s)) {
        // a payload mostly still in the socket: read straight through
        if (p.body != body_t::none && p.left >= p.tail - p.head + kDirectMin)
          p.expect = kExpectFrames;
        else if (p.expect > 0)
          --p.expect;
        continue;
      }
      if (p.blocked || p.dead) return;
    }
    if (!can_read) return;
    const int got = read_more(p);
    if (got == 0) return;
    can_read = got == 2;
  }
}

// How many bytes the next recv into `p`'s input buffer asks for while a
// large payload may come next (p.expect): enough for the frame's header
// and RMA extension, or for all of a frame that goes through the input
// buffer, and little more, so that a large payload's bytes go straight to
// their destination.
size_t socket_device_t::frame_ask(const peer_t& p) const
{
  const size_t have = p.tail - p.head;
  size_t ask = kPeekBytes;
  if (have >= sizeof(hdr_t)) {
    hdr_t h;
    std::memcpy(&h, p.in.data() + p.head, sizeof(h));
    const frame_t t = static_cast<frame_t>(h.type);
    const size_t whole = sizeof(h) + h.len;
    if ((t == frame_t::msg || t == frame_t::msg_acked) &&
        whole <= p.in.size() && whole - have > ask)
      ask = whole - have;
  }
  return ask;
}

// One recv into the input buffer (compacted first when the unparsed bytes
// sit near its end): 0 when nothing came (or the connection failed), 1
// when less than it asked for, 2 when it got all it asked for (more may
// wait). It asks for the buffer's free space, or frame_ask's bytes while a
// large payload may come next.
int socket_device_t::read_more(peer_t& p)
{
  if (p.head == p.tail) {
    p.head = p.tail = 0;
  } else if (p.tail == p.in.size() || p.head > p.in.size() / 2) {
    std::memmove(p.in.data(), p.in.data() + p.head, p.tail - p.head);
    p.tail -= p.head;
    p.head = 0;
  }
  size_t ask = p.in.size() - p.tail;
  if (ask == 0) return 0;
  if (p.expect > 0) ask = std::min(ask, frame_ask(p));
  ssize_t n;
  do {
    n = ::recv(p.fd, p.in.data() + p.tail, ask, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    ++data_recvs_;
    moved_ += static_cast<size_t>(n);
    p.tail += static_cast<size_t>(n);
    return static_cast<size_t>(n) == ask ? 2 : 1;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
  fail(p, recv_error(n, errno));
  return 0;
}

bool socket_device_t::take_recv(recv_t* r)
{
  util::spin_guard_t g(recv_lock_);
  if (recvs_.empty()) return false;
  *r = recvs_.front();
  recvs_.pop_front();
  return true;
}

void socket_device_t::answer(peer_t& p, frame_t type, uint64_t id)
{
  hdr_t h{sizeof(id), static_cast<uint8_t>(type), {}};
  struct iovec iov[2] = {{&h, sizeof(h)}, {&id, sizeof(id)}};
  emit(p, iov, 2, nullptr, 0, nullptr);
}

// The frame at p.head, whose header is there. True when it was consumed
// (or its payload is now being read as a body); false when more bytes are
// needed or it waits (no receive buffer: p.blocked).
bool socket_device_t::parse_one(peer_t& p, sink_t& s)
{
  hdr_t h;
  const char* at = p.in.data() + p.head;
  std::memcpy(&h, at, sizeof(h));
  const size_t avail = p.tail - p.head - sizeof(h);
  const char* body = at + sizeof(h);
  switch (static_cast<frame_t>(h.type)) {
    case frame_t::msg:
    case frame_t::msg_acked: {
      // msg_acked: the sender's id first, answered once delivered
      const bool acked = static_cast<frame_t>(h.type) == frame_t::msg_acked;
      uint64_t id = 0;
      const size_t pre = acked ? sizeof(id) : 0;
      if (h.len < pre) break;
      if (avail < pre) return false;
      if (acked) std::memcpy(&id, body, sizeof(id));
      body += pre;
      const size_t len = h.len - pre;
      const bool whole = avail - pre >= len;
      if (whole && s.scratch && s.scratch_used + len <= s.scratch_size) {
        char* dst = s.scratch + s.scratch_used;
        std::memcpy(dst, body, len);
        s.scratch_used += align16(len);
        cqe_t& c = s.next();
        c.kind = cqe_t::kind_t::message;
        c.ctx = dst;
        c.length = len;
        p.head += sizeof(h) + pre + len;
        if (acked) answer(p, frame_t::ack, id);
        return true;
      }
      // a message that will fit the input buffer once it is all there
      if (!whole && sizeof(h) + pre + len <= p.in.size()) return false;
      recv_t r;
      if (!take_recv(&r)) {
        p.blocked = true;
        return false;
      }
      p.head += sizeof(h) + pre;
      p.body = body_t::recv;
      p.body_acked = acked;
      p.body_id = id;
      p.body_ctx = r.ctx;
      p.got = 0;
      p.left = len;
      p.dst = static_cast<char*>(r.buf);
      p.body_error = nullptr;
      if (len > r.size) {
        // the core's receive buffers hold every message it sends: a
        // peer of another configuration; the message is dropped
        p.dst = nullptr;
        p.body_error =
            "socket backend: a message larger than the receive buffer";
      }
      return true;
    }
    case frame_t::write:
    case frame_t::writeimm: {
      rma_t x;
      if (avail < sizeof(x) || h.len < sizeof(x)) return false;
      std::memcpy(&x, body, sizeof(x));
      const size_t len = h.len - sizeof(x);
      p.head += sizeof(h) + sizeof(x);
      p.body = static_cast<frame_t>(h.type) == frame_t::write
                   ? body_t::write
                   : body_t::writeimm;
      p.dst = cfg_.keys->find(x.rkey, x.disp, len);
      p.got = 0;
      p.left = len;
      p.body_id = x.id;
      p.body_imm = x.arg;
      return true;
    }
    case frame_t::read_req: {
      rma_t x;
      if (avail < sizeof(x)) return false;
      std::memcpy(&x, body, sizeof(x));
      p.head += sizeof(h) + sizeof(x);
      const char* src = cfg_.keys->find(x.rkey, x.disp, x.arg);
      if (!src || x.arg >= kMaxFrame) {
        answer(p, frame_t::nack, x.id);
        return true;
      }
      hdr_t r{static_cast<uint32_t>(sizeof(x.id) + x.arg),
              static_cast<uint8_t>(frame_t::read_resp),
              {}};
      struct iovec iov[2] = {{&r, sizeof(r)}, {&x.id, sizeof(x.id)}};
      emit(p, iov, 2, src, x.arg, nullptr);
      return true;
    }
    case frame_t::read_resp: {
      uint64_t id;
      if (!take_id(&p.head, avail, body, &id)) return false;
      const size_t len = h.len - sizeof(id);
      p.body = body_t::read_resp;
      p.got = 0;
      p.left = len;
      p.dst = nullptr;
      p.body_ctx = nullptr;
      p.body_error = "socket backend: a read answer for no read";
      auto it = p.ops.find(id);
      if (it != p.ops.end()) {
        p.body_ctx = it->second.ctx;
        if (it->second.size == len) {
          p.dst = it->second.buf;
          p.body_error = nullptr;
        }
        p.ops.erase(it);
      }
      return true;
    }
    case frame_t::ack:
    case frame_t::nack: {
      uint64_t id;
      if (!take_id(&p.head, avail, body, &id)) return false;
      auto it = p.ops.find(id);
      if (it == p.ops.end()) return true;
      cqe_t& c = s.next();
      c.kind = it->second.kind;
      c.ctx = it->second.ctx;
      if (static_cast<frame_t>(h.type) == frame_t::nack) {
        c.error = "socket backend: the target refused the key, offset or size";
        c.rank = p.rank;
        c.refused = true;
      }
      p.ops.erase(it);
      return true;
    }
    case frame_t::bye:
      p.head += sizeof(h);
      p.closing = true;
      return true;
  }
  fail(p, "socket backend: a corrupt frame from the peer");
  return false;
}

// Moves the current body's bytes from the input buffer, then straight from
// the socket (at most recv_chunk per recv, device.hpp), to its
// destination. True when it finished (or may go on);
// false when the socket has nothing more now.
bool socket_device_t::continue_body(peer_t& p, sink_t& s)
{
  const size_t take = std::min(p.tail - p.head, p.left);
  if (take) {
    if (p.dst) {
      std::memcpy(p.dst + p.got, p.in.data() + p.head, take);
      staged_ += take;
    }
    p.head += take;
    p.got += take;
    p.left -= take;
  }
  if (p.left == 0) {
    finish_body(p, s);
    return true;
  }
  if (p.self) return false;
  p.head = p.tail = 0;
  // a discarded payload goes through the input buffer
  char* to = p.dst ? p.dst + p.got : p.in.data();
  size_t ask = p.dst ? p.left : std::min(p.left, p.in.size());
  if (cfg_.recv_chunk && ask > cfg_.recv_chunk) ask = cfg_.recv_chunk;
  ssize_t n;
  do {
    n = ::recv(p.fd, to, ask, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    ++data_recvs_;
    moved_ += static_cast<size_t>(n);
    p.got += static_cast<size_t>(n);
    p.left -= static_cast<size_t>(n);
    if (p.left == 0) finish_body(p, s);
    return static_cast<size_t>(n) == ask;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
  fail(p, recv_error(n, errno));
  return false;
}

void socket_device_t::finish_body(peer_t& p, sink_t& s)
{
  const body_t b = p.body;
  p.body = body_t::none;
  switch (b) {
    case body_t::recv: {
      cqe_t& c = s.next();
      c.kind = cqe_t::kind_t::recv;
      c.ctx = p.body_ctx;
      c.length = p.got;
      c.rank = p.rank;
      c.error = p.body_error;
      if (p.body_acked) answer(p, frame_t::ack, p.body_id);
      return;
    }
    case body_t::write:
      answer(p, p.dst ? frame_t::ack : frame_t::nack, p.body_id);
      return;
    case body_t::writeimm:
      if (p.dst) {
        cqe_t& c = s.next();
        c.kind = cqe_t::kind_t::remote_write;
        c.imm = p.body_imm;
      }
      answer(p, p.dst ? frame_t::ack : frame_t::nack, p.body_id);
      return;
    case body_t::read_resp: {
      if (!p.body_ctx) return;
      cqe_t& c = s.next();
      c.kind = cqe_t::kind_t::read;
      c.ctx = p.body_ctx;
      c.error = p.body_error;
      return;
    }
    case body_t::none:
      return;
  }
}

}  // namespace lci::net::socket
