#include "net/socket/outq.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace lci::net::socket
{

void outq_t::append_copy(const struct iovec* iov, int n)
{
  size_t total = 0;
  for (int i = 0; i < n; ++i) total += iov[i].iov_len;
  if (total == 0) return;
  // the last segment can grow when it is the tail chunk's and ends at its
  // used end
  const bool grow =
      tail_ && !segs_.empty() && segs_.back().chunk == tail_ &&
      segs_.back().ptr + segs_.back().len == tail_->data() + tail_used_ &&
      tail_used_ + total <= tail_->size();
  if (!grow && (!tail_ || tail_used_ + total > tail_->size())) {
    tail_ = std::make_shared<std::vector<char>>(std::max(kChunk, total));
    tail_used_ = 0;
  }
  char* dst = tail_->data() + tail_used_;
  for (int i = 0; i < n; ++i) {
    std::memcpy(dst, iov[i].iov_base, iov[i].iov_len);
    dst += iov[i].iov_len;
  }
  if (grow) {
    segs_.back().len += total;
  } else {
    seg_t s{tail_->data() + tail_used_, total, tail_, false, cqe_t()};
    segs_.push_back(std::move(s));
  }
  tail_used_ += total;
  owned_ += total;
}

void outq_t::append_borrowed(const void* buf, size_t len, const cqe_t* done)
{
  seg_t s{static_cast<const char*>(buf), len, nullptr, done != nullptr,
          done ? *done : cqe_t()};
  segs_.push_back(std::move(s));
}

int outq_t::flush(int fd, std::deque<cqe_t>* out)
{
  constexpr int kMaxIov = 64;
  while (!segs_.empty()) {
    struct iovec iov[kMaxIov];
    int n = 0;
    for (auto it = segs_.begin(); it != segs_.end() && n < kMaxIov; ++it, ++n)
      iov[n] = {const_cast<char*>(it->ptr), it->len};
    struct msghdr m {
    };
    m.msg_iov = iov;
    m.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = ::sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : errno;
    }
    size_t left = static_cast<size_t>(w);
    written_ += left;
    bool partial = false;
    while (!segs_.empty()) {
      seg_t& s = segs_.front();
      if (left < s.len) {
        s.ptr += left;
        s.len -= left;
        if (s.chunk) owned_ -= left;
        partial = true;
        break;
      }
      left -= s.len;
      if (s.chunk) owned_ -= s.len;
      if (s.has_cqe) out->push_back(s.cqe);
      if (s.chunk == tail_ && segs_.size() == 1) tail_used_ = 0;
      segs_.pop_front();
    }
    if (partial) return 0;  // the socket is full
  }
  return 0;
}

void outq_t::drop(std::deque<cqe_t>* out)
{
  for (seg_t& s : segs_)
    if (s.has_cqe) out->push_back(s.cqe);
  segs_.clear();
  owned_ = 0;
  tail_.reset();
  tail_used_ = 0;
}

}  // namespace lci::net::socket
