// The device of the socket backend (socket.hpp): one nonblocking TCP
// connection (TCP_NODELAY) per peer rank, made at connect; messages to
// itself loop back in memory. Defined by concern: device.cpp (connection
// setup, failure, diagnostics), send.cpp (the posts), receive.cpp (poll and
// frame parsing); outq.hpp is a peer's output queue, keys.hpp the
// registration table, wire.hpp the frames.
//
// Sending: a post writes straight to the socket (one sendmsg of header and
// payload) when the peer's output queue is empty; what the socket does not
// take goes to the queue (copied for send_copy and headers, borrowed for
// post_send and RMA payloads), flushed by later posts and polls. A borrowed
// buffer completes when its last byte is in the kernel.
//
// Receiving: each poll reads as much as a peer has ready into that peer's
// input buffer with one recv, then parses whole frames in order: messages
// go to the caller's scratch buffer (`message` cqes) while they fit, else
// into pre-posted receives; payloads of RMA frames and messages larger than
// the input buffer are read straight into their destination, at most
// recv_chunk bytes per recv, recv after recv while each fills: a recv holds
// the socket's lock for its whole copy, and the segments that arrive
// meanwhile wait unacknowledged in the socket's backlog until it returns,
// so one recv of a whole large payload stops the acks that free the
// sender's send buffer. A payload with kDirectMin bytes or more still in
// the socket when its header is parsed makes the
// reads at its peer's next frame starts short (kPeekBytes, or the rest of
// a frame bound for the input buffer): a large payload that follows one
// puts at most a few hundred of its bytes into the input buffer, to be
// copied out, instead of a whole buffer's worth, while small messages
// after the last large one are read a buffer at a time again once
// kExpectFrames frames have passed. With few peers a poll tries recv on
// each; with more, one epoll_wait(0) says which.
//
// Failure: EOF or an error on a peer's connection fails every operation
// still pending with that peer (queued sends, writes and reads waiting for
// their answer) as an error cqe with the peer's rank, and every later post
// to it the same way.
//
// Waiting: a poll that moved no byte and found nothing, while a peer's
// output queue waits for room in its socket or a payload is half read,
// counts as a stall; after kStallPolls of them in a row the poll sleeps in
// ppoll (the lock released) until a socket can take more or has bytes, for
// at most wait_us. Only the kernel can move such a transfer on, and on a
// machine with few cores a thread that retries the socket takes the core
// the kernel's own TCP work (and the peer) needs.
//
// Locks: one try-lock per device guards its peers (posts return
// retry_lock when it is busy, poll_comp nothing); the posted receives have
// a short spinlock of their own.
#ifndef LCI_NET_SOCKET_DEVICE_HPP
#define LCI_NET_SOCKET_DEVICE_HPP

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "net/net.hpp"
#include "net/socket/keys.hpp"
#include "net/socket/outq.hpp"
#include "net/socket/wire.hpp"
#include "util/spinlock.hpp"

namespace lci::net::socket
{

// the default of config_t::wait_us (LCI_SOCKET_WAIT_US overrides): no
// sleep, since a progress call that sleeps delays whatever else the
// caller's device carries (hybrid's node-local side) and the caller's
// thread, which a task runtime needs back at once
constexpr size_t kWaitUs = 0;

// the default of config_t::recv_chunk (LCI_SOCKET_RECV_CHUNK overrides)
constexpr size_t kRecvChunk = 256 * 1024;

struct config_t {
  int rank_me, rank_n;
  std::string ip;   // the address this rank listens on (dotted IPv4)
  size_t max_copy;  // route_caps_t::max_copy
  size_t connect_timeout_s;
  // the longest sleep of a stalled poll (microseconds; 0: never sleep)
  size_t wait_us = kWaitUs;
  // the most bytes one recv of a payload asks for (0: all that is due)
  size_t recv_chunk = kRecvChunk;
  std::shared_ptr<key_table_t> keys;
};

// peers above this count are polled through epoll
constexpr size_t kDirectPollPeers = 4;
// bytes of a peer's input buffer
constexpr size_t kInBuf = 256 * 1024;
// a payload with this many bytes or more still in the socket (read
// straight into its destination) makes
// the reads at the next kExpectFrames frame starts of its peer short
// (kPeekBytes, or the rest of a frame that goes through the input buffer)
// so that a large payload behind them lands in the input buffer only for
// its first bytes (device.hpp, Receiving)
constexpr size_t kDirectMin = 64 * 1024;
constexpr uint8_t kExpectFrames = 8;
constexpr size_t kPeekBytes = 256;
// polls in a row that stall (device.hpp, Waiting) before one sleeps
constexpr uint32_t kStallPolls = 8;
// bytes copied into a peer's output queue before send_copy says
// retry_nomem
constexpr size_t kOutMax = size_t(8) << 20;

class socket_device_t final : public net_device_t
{
 public:
  explicit socket_device_t(const config_t& cfg);
  ~socket_device_t() override;

  std::string get_address() override { return address_; }
  void connect(const std::vector<std::string>& addrs) override;
  route_caps_t route(int rank) override;
  error_t send_copy(int rank, const void* head, size_t hlen, const void* tail,
                    size_t tlen) override;
  error_t post_send(int rank, const void* buf, size_t size, void* ctx) override;
  error_t post_send_network(int rank, const void* buf, size_t size,
                            void* ctx) override;
  error_t post_recv(void* buf, size_t size, void* ctx) override;
  error_t post_write(int rank, const void* buf, size_t size, void* desc,
                     const remote_t& remote, void* ctx,
                     bool delivered) override;
  error_t post_writeimm(int rank, const void* buf, size_t size, void* desc,
                        const remote_t& remote, uint64_t imm,
                        void* ctx) override;
  error_t post_read(int rank, void* buf, size_t size, void* desc,
                    const remote_t& remote, void* ctx) override;
  size_t poll_comp(cqe_t* out, size_t max, char* scratch,
                   size_t scratch_size) override;
  std::string debug_state() override;
  // recv calls that moved bytes so far (for tests)
  uint64_t data_recvs() const { return data_recvs_; }
  // bytes of payloads read straight into their destination that came
  // through the input buffer first, so far (for tests)
  uint64_t staged_bytes() const { return staged_; }

 private:
  // an operation waiting for the target's answer (write, read, network
  // send)
  struct op_t {
    cqe_t::kind_t kind;
    void* ctx;
    char* buf;  // read: where the data goes
    size_t size;
  };

  // what happens when a frame's payload has been read to its end
  enum class body_t : uint8_t { none, recv, write, writeimm, read_resp };

  struct peer_t {
    int rank = -1;
    int fd = -1;  // -1: this rank itself (loopback in memory), or failed
    bool self = false;
    bool dead = false;
    bool closing = false;  // it said bye: its end of the stream is no failure
    bool blocked = false;  // this poll: a message waits for a receive
    const char* why = nullptr;  // dead: the reason
    outq_t out;
    std::vector<char> in;  // input buffer; bytes [head, tail) unparsed
    size_t head = 0, tail = 0;
    // a payload being read straight into its destination
    body_t body = body_t::none;
    char* dst = nullptr;  // null: discarded (a refused write)
    size_t left = 0;      // bytes still to come
    size_t got = 0;       // bytes already there
    void* body_ctx = nullptr;
    uint64_t body_id = 0, body_imm = 0;
    const char* body_error = nullptr;  // the body's cqe fails with this
    bool body_acked = false;           // recv: answer body_id once delivered
    // frames still to parse before reads ask for all the buffer's room
    // again (kExpectFrames)
    uint8_t expect = 0;
    std::unordered_map<uint64_t, op_t> ops;  // by id
  };

  struct recv_t {
    void* buf;
    size_t size;
    void* ctx;
  };

  // send.cpp
  // Writes the pieces as one frame to `p`: straight to the socket when its
  // queue is empty, the rest (or all) queued. Pieces in `copy` are copied,
  // `borrow` (may be null) is queued by reference with `done` as its cqe.
  // True when every byte is in the kernel (or, to itself, in memory).
  bool emit(peer_t& p, struct iovec* iov, int n, const void* borrow,
            size_t blen, const cqe_t* done);
  error_t post_rma(int rank, frame_t type, const void* buf, size_t size,
                   const remote_t& remote, uint64_t arg, void* ctx);
  error_t post_dead(peer_t& p, cqe_t::kind_t kind, void* ctx);
  void flush(peer_t& p);

  // receive.cpp
  struct sink_t;
  void progress_in(peer_t& p, sink_t& s);
  int read_more(peer_t& p);
  size_t frame_ask(const peer_t& p) const;
  bool parse_one(peer_t& p, sink_t& s);
  bool continue_body(peer_t& p, sink_t& s);
  void finish_body(peer_t& p, sink_t& s);
  void answer(peer_t& p, frame_t type, uint64_t id);
  bool take_recv(recv_t* r);
  bool stalled() const;
  void sleep_unlock();

  // device.cpp
  void fail(peer_t& p, const char* why);
  void push_error(cqe_t::kind_t kind, void* ctx, int rank, const char* why,
                  bool refused);

  config_t cfg_;
  std::string address_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  std::vector<peer_t> peers_;
  std::vector<int> polled_;  // ranks with a connection (not self)
  util::spinlock_t lock_;
  util::spinlock_t recv_lock_;
  std::deque<recv_t> recvs_;
  std::deque<cqe_t> done_;  // completions made outside poll_comp
  uint64_t next_id_ = 1;
  uint64_t moved_ = 0;       // bytes read and written by this device so far
  uint64_t data_recvs_ = 0;  // recv calls that moved bytes
  uint64_t staged_ = 0;      // staged_bytes()
  uint32_t stalls_ = 0;      // polls in a row that stalled
};

}  // namespace lci::net::socket

#endif  // LCI_NET_SOCKET_DEVICE_HPP
