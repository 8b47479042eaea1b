// One peer's output queue in the socket backend (socket.hpp): the bytes
// that did not fit into the socket when they were posted, in posting order.
// A segment either borrows the caller's buffer (a post_send or RMA payload:
// it completes when its last byte is in the kernel) or holds bytes copied
// into chunks the queue owns (send_copy, headers, acks), appended to the
// last chunk while it has room so that small frames cost no allocation.
// flush() hands as many segments as fit to one sendmsg. Not thread-safe:
// the device's lock guards it.
#ifndef LCI_NET_SOCKET_OUTQ_HPP
#define LCI_NET_SOCKET_OUTQ_HPP

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "net/net.hpp"

namespace lci::net::socket
{

class outq_t
{
 public:
  bool empty() const { return segs_.empty(); }
  // bytes copied into owned chunks and not yet written
  size_t owned_bytes() const { return owned_; }
  // bytes written to the socket so far (grows by each flush's share)
  uint64_t written() const { return written_; }
  // Copies the pieces (in order) to the queue's end.
  void append_copy(const struct iovec* iov, int n);
  // Queues the caller's buffer; `done` (if ctx is set) is the cqe that
  // reports its last byte written.
  void append_borrowed(const void* buf, size_t len, const cqe_t* done);
  // Writes what the socket takes (one sendmsg); completed borrowed
  // segments' cqes are appended to `out`. 0, or the errno that failed the
  // connection (EAGAIN is not a failure).
  int flush(int fd, std::deque<cqe_t>* out);
  // Empties the queue: the cqes of borrowed segments not yet written are
  // appended to `out` (the caller marks them failed).
  void drop(std::deque<cqe_t>* out);

 private:
  struct seg_t {
    const char* ptr;
    size_t len;  // bytes left, from ptr
    // owned: the chunk holding the bytes (null when borrowed)
    std::shared_ptr<std::vector<char>> chunk;
    bool has_cqe;
    cqe_t cqe;
  };
  static constexpr size_t kChunk = 64 * 1024;
  std::deque<seg_t> segs_;
  size_t owned_ = 0;
  uint64_t written_ = 0;
  // the chunk small copies go to, and its bytes in use
  std::shared_ptr<std::vector<char>> tail_;
  size_t tail_used_ = 0;
};

}  // namespace lci::net::socket

#endif  // LCI_NET_SOCKET_OUTQ_HPP
