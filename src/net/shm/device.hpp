// The device of the native shm backend (shm.hpp): its rings, doorbell,
// receive path, RMA and fallback transfers. The members are defined by
// concern: device.cpp (segment and connection), receive.cpp (poll and
// drain), rma.cpp (CMA and fallback posts), completions.cpp (delivery
// tracking of network-level sends), debug.cpp (the dump); its parts are
// objects of their own: tx_ring.hpp (a peer's producer ring), jobs.hpp
// (the fallback transfer engine), completions.hpp (local completions),
// segment.hpp (the segment's layout), wire.hpp (the ring messages).
//
// Doorbell (doorbell.hpp, with its proof that no message is ever missed): a
// sender pushes, then sets its bit in the receiver's doorbell word unless it
// is set; the receiver peeks the rings whose bits are set ("hot") at every
// poll and leaves the bits set, so a busy sender only reads the word. After
// idle_polls_ polls in a row that find a hot ring empty, the receiver cools
// it down: doorbell_cool clears the bits of the word's cooling rings (and,
// when some sender may publish with plain stores, issues the membarrier),
// then one more peek of each; a message found goes to pending_, drained at
// the next poll whatever the bits say. While a ring is hot its messages
// need no bell at all. Idle cost: one load per 64 cold senders per poll,
// plus a peek per hot ring.
//
// Devices pair by index across ranks, as with ofi. Locks: the consumer side
// of a device (its rings, pending_) is one try-lock (poll_comp returns 0 when
// busy); the producer side has a try-lock per destination ring (posts return
// retry_lock when busy); the local completion list, the posted receives and
// the fallback transfer queue have short spinlocks of their own.
#ifndef LCI_NET_SHM_DEVICE_HPP
#define LCI_NET_SHM_DEVICE_HPP

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net/net.hpp"
#include "net/shm/completions.hpp"
#include "net/shm/doorbell.hpp"
#include "net/shm/jobs.hpp"
#include "net/shm/keys.hpp"
#include "net/shm/ring.hpp"
#include "net/shm/segment.hpp"
#include "net/shm/tx_ring.hpp"
#include "net/shm/wire.hpp"
#include "util/error.hpp"
#include "util/spinlock.hpp"

namespace lci::net::shm
{

// bytes of messages a device parks when no receive is posted
constexpr size_t kOverflowMax = size_t(4) << 20;
// polls in a row that find a hot ring empty before it cools down; with
// the membarrier (doorbell.hpp), whose interrupt stalls the other cores
// and so slows a busy peer's bandwidth, 64 times more: a hot idle ring
// costs a load per poll, a cool-down a system call
constexpr uint32_t kIdlePolls = 1024;
constexpr uint32_t kIdlePollsHeavy = 64 * kIdlePolls;

struct config_t {
  int rank_me, rank_n;
  std::string node;  // net::node_id of this rank
  size_t ring_bytes;
  bool use_cma;
  // RMA transfers of at least this many bytes use CMA (where a peer
  // permits it); smaller ones go through the rings (shm_cma_threshold)
  size_t cma_min;
  // shm_membarrier is on and this process is registered for the
  // membarrier (doorbell.hpp)
  bool membarrier;
  // the context's registrations, and its peers' (keys.hpp)
  std::shared_ptr<key_table_t> keys;
};

struct peer_t {
  void* base = nullptr;  // the peer's segment, mapped here
  size_t size = 0;
  pid_t pid = 0;  // kept for peer failure detection
  bool cma = false;
};

struct posted_recv_t {
  void* buf;
  size_t size;
  void* ctx;
};
class shm_device_t final : public net_device_t
{
 public:
  explicit shm_device_t(const config_t& cfg);

  ~shm_device_t() override;

  std::string get_address() override;

  void connect(const std::vector<std::string>& addrs) override;

  // Every peer has mapped the segment by now: its name can go at once, so a
  // rank that crashes later leaves nothing in /dev/shm.
  void connected() override;

  // Every message the core sends fits a ring slot run: it is copied there
  // as it would be from a packet, so a send never needs a packet.
  route_caps_t route(int) override
  {
    return route_caps_t{tx_[0].prod.max_payload(), true};
  }

  // the header and the payload straight into the ring: one copy
  error_t send_copy(int rank, const void* head, size_t hlen, const void* tail,
                    size_t tlen) override
  {
    return push(rank, kMsg, head, hlen, tail, tlen, errorcode_t::done);
  }

  // copied into the ring: the buffer is free on return
  error_t post_send(int rank, const void* buf, size_t size, void*) override
  {
    return push(rank, kMsg, buf, size, nullptr, 0, errorcode_t::done);
  }

  // Completes when the target's consumer has taken the message out of the
  // ring (into a posted receive): "delivery".
  error_t post_send_network(int rank, const void* buf, size_t size,
                            void* ctx) override;

  error_t post_recv(void* buf, size_t size, void* ctx) override;

  error_t post_write(int rank, const void* buf, size_t size, void*,
                     const remote_t& remote, void* ctx, bool) override;

  error_t post_writeimm(int rank, const void* buf, size_t size, void*,
                        const remote_t& remote, uint64_t imm,
                        void* ctx) override;

  error_t post_read(int rank, void* buf, size_t size, void*,
                    const remote_t& remote, void* ctx) override;

  size_t poll_comp(cqe_t* out, size_t max, char* scratch,
                   size_t scratch_size) override;

  // fallback transfers (a peer's get, a write's ack) not pushed yet
  bool busy() override { return jobs_.any(); }

  std::string debug_state() override;

 private:
  static slot_t* ring_of(char* base, int r, const layout_t& lay)
  {
    return reinterpret_cast<slot_t*>(base + lay.off_rings +
                                     lay.ring_bytes * static_cast<size_t>(r));
  }
  slot_t* ring_of(char* base, int r) const { return ring_of(base, r, lay_); }
  ring_ctrl_t* ctrl_of(char* base, int r) const
  {
    return reinterpret_cast<ring_ctrl_t*>(base + lay_.off_ctrl + 64 * r);
  }

  void map_peer(int r, const std::string& name, peer_t* p);

  // The error for a peer's segment that cannot be opened. The peer's
  // segment exists from before its address was published until every peer
  // has mapped it, so a missing segment while its owner runs is a bug of
  // ours; an owner that is gone, or a different /dev/shm, is the setup.
  [[noreturn]] void open_failed(int r, const std::string& name, pid_t pid,
                                int err);

  // unlinks the segment's name once every peer has mapped it
  void try_unlink();

  // The target's registration table refuses the transfer (keys.hpp): its
  // operation completes with the reason, flagged as a refusal (the peer is
  // fine), and no byte moves.
  bool refuse(int rank, const remote_t& remote, uint64_t raddr, size_t size,
              cqe_t::kind_t kind, void* ctx);

  // whether an RMA transfer of `size` bytes with `rank` takes one copy
  // with CMA (else data chunks through the rings)
  bool by_cma(int rank, size_t size) const
  {
    return peers_[rank].cma && size >= cfg_.cma_min;
  }

  void check_size(size_t size)
  {
    if (size > tx_[0].prod.max_payload())
      util::throw_fatal("native shm backend: a ", size,
                        "-byte message exceeds the ring's largest (",
                        tx_[0].prod.max_payload(),
                        "; raise LCI_ATTR_SHM_RING_SIZE)");
  }

  [[gnu::always_inline]] error_t push(int rank, uint16_t type, const void* a,
                                      size_t alen, const void* b, size_t blen,
                                      errorcode_t ok)
  {
    check_size(alen + blen);
    tx_ring_t& t = tx_[rank];
    if (!t.lock.try_lock()) return errorcode_t::retry_lock;
    if (t.jobs_ahead()) {
      t.lock.unlock();
      return errorcode_t::retry_nomem;  // behind a fallback transfer
    }
    bool pushed = t.prod.push(type, a, alen, b, blen);
    if (pushed) t.ring_bell();
    t.lock.unlock();
    return pushed ? error_t(ok) : error_t(errorcode_t::retry_nomem);
  }

  // delivery completions of post_send_network: the consumer's published
  // head has passed the message
  void check_network();

  // Drains the rings with messages: the doorbell's bits and pending_.
  // (The words' hot and pending bits are kept in locals meanwhile: the
  // copies into the scratch buffer may alias any member.)
  size_t drain(cqe_t* out, size_t max);

  uint64_t* bell_word(size_t w) const
  {
    return reinterpret_cast<uint64_t*>(seg_ + lay_.off_bell + 64 * w);
  }

  // Handles the messages of ring r while there is room for completions,
  // then publishes its head; true when the ring is (was seen) empty. The
  // common message, one that goes in place into the scratch buffer, is
  // handled here on local copies of the ring's consumer state and of the
  // scratch position (registers: the copies into the scratch may alias
  // any member); every other goes through handle_other, around which the
  // locals are written back and reloaded.
  bool drain_ring(int r, cqe_t* out, size_t max, size_t* pn);

  bool pop_recv(posted_recv_t* rv);

  // `rank`: the sender, which the completion reports
  static cqe_t deliver(const posted_recv_t& rv, int rank, const void* data,
                       size_t len);

  // parked messages into receives posted since
  size_t drain_overflow(cqe_t* out, size_t max);

  // A message that does not go in place (drain_ring has those): false when
  // it must stay (no receive buffer posted).
  [[gnu::noinline]] bool handle_other(int r, const ring_consumer_t::msg_t& m,
                                      cqe_t* out, size_t* n);

  const config_t cfg_;
  const layout_t lay_;
  std::string name_;
  char* seg_ = nullptr;
  bool unlinked_ = false;
  std::vector<peer_t> peers_;
  std::unique_ptr<tx_ring_t[]> tx_;
  std::atomic<int64_t> nnetwork_{0};
  // consumer side (under lock_)
  alignas(64) util::spinlock_t lock_;
  std::vector<ring_consumer_t> rx_;
  std::vector<uint64_t> pending_;  // rings left non-empty, not hot
  std::vector<uint64_t> hot_;      // rings polled directly, bits left set
  std::vector<uint32_t> idle_;     // a hot ring's polls in a row with nothing
  uint32_t idle_polls_ = cfg_.membarrier ? kIdlePollsHeavy : kIdlePolls;
  // messages that found no posted receive, oldest first (at most
  // kOverflowMax bytes; beyond, messages wait in their rings)
  struct parked_t {
    int rank;  // the sender
    std::string bytes;
  };
  std::deque<parked_t> overflow_;
  size_t overflow_bytes_ = 0;
  // the current poll's scratch buffer (message cqes), and its free bytes
  char* scratch_ = nullptr;
  size_t scratch_left_ = 0;
  local_cqes_t local_;
  alignas(64) util::spinlock_t recv_lock_;
  std::deque<posted_recv_t> recvs_;
  job_engine_t jobs_;  // fallback transfers
};

}  // namespace lci::net::shm

#endif  // LCI_NET_SHM_DEVICE_HPP
