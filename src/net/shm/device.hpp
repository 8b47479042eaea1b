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
// Receiving: peek and consume. A message (kMsg) of up to kCopyMax bytes is
// copied into the poller's scratch buffer while it has room (by the drain
// loop itself: one that fits its header slot, 24 bytes, an LCI header and
// up to 8 bytes, as a fixed 24 bytes; up to 128 bytes with a few fixed
// moves; above with memcpy) and its slots consumed at once; a larger one is not
// copied by the backend: poll_comp hands the core a
// message cqe pointing at its payload in the ring (the ring lends it,
// ring.hpp take) and keeps the consumer lock; the core delivers every cqe
// of the poll in place, then calls release(), which publishes the lending
// rings' heads (one store per ring, whatever the number and sizes of its
// lent messages: the slots go back to their senders) and drops the lock. A
// poll that lent nothing drops the lock before it returns, and the core
// skips its release (loan_marker). So the core never pre-posts a receive
// (needs_recvs is false) and nothing is parked: a message waits in its
// ring until the core takes it. Other threads polling the device while a
// loan is out find the lock busy (nothing polled); a poll from inside the
// delivery (a handler that progresses its device) is the core's to order:
// it delivers the rest of the lent batch and releases it first
// (core/progress.cpp). The raw network layer (core/net_post.cpp) polls
// with no scratch buffer: then every message goes into a receive it posted
// (post_recv), in order, and a ring whose next message finds none waits.
//
// Quiet polls: an idle poll of a device with at most one hot ring reads
// that ring's next header word and the doorbell word without the consumer
// lock (quiet(), armed by the last locked poll that found nothing).
//
// Devices pair by index across ranks, as with ofi. Locks: the consumer side
// of a device (its rings, pending_) is one try-lock (poll_comp returns 0 when
// busy; a quiet poll takes none), held from a poll that lent messages to its
// release(); the producer side has a try-lock per destination ring (posts
// return retry_lock when busy); the local completion list, the raw layer's
// posted receives and the fallback transfer queue have short spinlocks of
// their own.
#ifndef LCI_NET_SHM_DEVICE_HPP
#define LCI_NET_SHM_DEVICE_HPP

#include <sys/types.h>

#include <algorithm>
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

// polls in a row that find a hot ring empty before it cools down; with
// the membarrier (doorbell.hpp), whose interrupt stalls the other cores
// and so slows a busy peer's bandwidth, 64 times more: a hot idle ring
// costs a load per poll, a cool-down a system call
constexpr uint32_t kIdlePolls = 1024;
constexpr uint32_t kIdlePollsHeavy = 64 * kIdlePolls;

// Messages (header and payload) up to this size are copied into the
// poller's scratch buffer and consumed at once while it has room; larger
// ones are lent in place (poll_comp). Below it the copy costs fewer
// instructions than the loan (the batch frame, the release call, the lock
// held meanwhile). Above it the copy loses although it saves instructions:
// the message's lines are read across cores into the scratch, and the
// core's copy out to the user's buffer reads what those stores write, so
// it waits for them: both copies lie on the message's path, while a lent
// message's one copy from the ring is the only one.
constexpr size_t kCopyMax = 256;

// The largest message (header and payload) the core sends eagerly to a
// peer here (route_caps_t::max_eager): up to it one copy into the ring and
// one out of it (the receiver reads the message in place) cost less than
// the rendezvous's three more messages and its transfer (below the CMA
// threshold the same two copies, through the rings). It is the largest
// message that takes the ring slots of a 16 KiB one (a 16 KiB message
// with its ring header already spills into one more slot), so a 16 KiB
// payload with the core's header goes eagerly at no cost in ring space.
constexpr size_t kMaxEager = (size_t(16) << 10) + kSlot - kRingHeader;
static_assert(slots_for(kMaxEager) == slots_for(size_t(16) << 10),
              "the eager limit takes the slots of a 16 KiB message");

// The word a quiet poll watches when no ring is hot: always poison, so
// such a poll looks at the doorbell word alone.
inline constexpr uint64_t kQuietWord = kPoison;

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

// a receive posted by the raw network layer
struct posted_recv_t {
  void* buf;
  size_t size;
  void* ctx;
};

struct peer_t {
  void* base = nullptr;  // the peer's segment, mapped here
  size_t size = 0;
  pid_t pid = 0;  // kept for peer failure detection
  bool cma = false;
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
  // as it would be from a packet, so a send never needs a packet; nor does
  // a receive (messages come in place), so eager messages may be larger
  // than a packet. Transfers by CMA are direct (route_caps_t::direct_min).
  route_caps_t route(int rank) override
  {
    const size_t direct = peers_[static_cast<size_t>(rank)].cma
                              ? std::max<size_t>(cfg_.cma_min, 1)
                              : 0;
    return route_caps_t{max_payload_, true, kMaxEager, direct};
  }

  // the header and the payload straight into the ring: one copy (a core
  // header and up to 8 bytes, one slot, with no call and no size check)
  error_t send_copy(int rank, const void* head, size_t hlen, const void* tail,
                    size_t tlen) override
  {
    if (__builtin_expect(hlen == 16 && tlen <= 8, 1))
      return push_one(rank, head, tail, tlen);
    return push_any(rank, head, hlen, tail, tlen);
  }

  // copied into the ring: the buffer is free on return
  error_t post_send(int rank, const void* buf, size_t size, void*) override
  {
    return push(rank, kMsg, buf, size, nullptr, 0, errorcode_t::done);
  }

  // Completes when the target's core has delivered the message and its
  // backend given the ring slots back: "delivery".
  error_t post_send_network(int rank, const void* buf, size_t size,
                            void* ctx) override;

  // messages come in place (message cqes): the core posts no receives
  bool needs_recvs() override { return false; }

  // a receive of the raw network layer, which polls with no scratch
  // buffer: the next message of any peer lands in it
  error_t post_recv(void* buf, size_t size, void* ctx) override;

  error_t post_write(int rank, const void* buf, size_t size, void*,
                     const remote_t& remote, void* ctx, bool) override;

  error_t post_writeimm(int rank, const void* buf, size_t size, void*,
                        const remote_t& remote, uint64_t imm,
                        void* ctx) override;

  error_t post_read(int rank, void* buf, size_t size, void*,
                    const remote_t& remote, void* ctx) override;

  // (no scratch: the raw layer's poll, into its posted receives)
  size_t poll_comp(cqe_t* out, size_t max, char* scratch,
                   size_t scratch_size) override;

  // The messages lent in the poll that filled `batch` back to their rings,
  // and the consumer lock dropped; nothing when that poll lent none. (The
  // lending poll may have filled a part of the batch: under net/hybrid.)
  void release(const cqe_t* batch, size_t n) override
  {
    const auto at =
        reinterpret_cast<uintptr_t>(lent_at_.load(std::memory_order_relaxed));
    const auto b = reinterpret_cast<uintptr_t>(batch);
    if (at - b >= n * sizeof(cqe_t)) return;  // (unsigned: at < b too)
    lent_at_.store(nullptr, std::memory_order_relaxed);
    publish_lent();
    lock_.unlock();
  }

  const std::atomic<const cqe_t*>* loan_marker() override { return &lent_at_; }

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
    if (__builtin_expect(size > max_payload_, 0))
      util::throw_fatal("native shm backend: a ", size,
                        "-byte message exceeds the ring's largest (",
                        max_payload_, "; raise LCI_ATTR_SHM_RING_SIZE)");
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

  // send_copy's general case (out of line: the one-slot case needs none of
  // its registers)
  [[gnu::noinline]] error_t push_any(int rank, const void* head, size_t hlen,
                                     const void* tail, size_t tlen)
  {
    return push(rank, kMsg, head, hlen, tail, tlen, errorcode_t::done);
  }

  // push() of a 16-byte header and up to 8 bytes (ring_producer_t::push_one);
  // when a fallback transfer is queued or the ring looks full, push_any
  // (which locks again) decides, so that this path makes no call
  [[gnu::always_inline]] error_t push_one(int rank, const void* head,
                                          const void* tail, size_t tlen)
  {
    tx_ring_t& t = tx_[rank];
    if (!t.lock.try_lock()) return errorcode_t::retry_lock;
    if (__builtin_expect(t.jobs_ahead() || !t.prod.one_fits(), 0)) {
      t.lock.unlock();
      return push_any(rank, head, 16, tail, tlen);
    }
    t.prod.push_one(kMsg, head, tail, tlen);
    t.ring_bell();
    t.lock.unlock();
    return errorcode_t::done;
  }

  // Whether this poll can return nothing without the consumer lock: armed
  // (arm_quiet), the hot ring's header word at its head still poison, no
  // doorbell bit but the hot ring's, no local completion, delivery check
  // or fallback transfer waiting, and quiet polls left in the budget (one
  // is taken). What it reads may be stale (another thread's poll moved
  // on): then it misses, for this one poll, what that poll changed, as a
  // busy lock would make it miss it; the next poll reads it all again.
  [[gnu::always_inline]] bool quiet()
  {
#if defined(__SANITIZE_THREAD__)
    // A poll that read watch_ just before another thread's locked poll
    // moved the head on, and then stalled for a whole lap of the ring,
    // reads a slot that the producer may be filling with payload by then:
    // whatever it reads only decides between "nothing" and a locked poll,
    // both right for a stale state, but ThreadSanitizer reports the
    // atomic read against the plain copy. Its builds keep every poll
    // locked.
    return false;
#endif
    const uint64_t* word = watch_.load(std::memory_order_acquire);
    // (the message at the head first: when one is there, nothing else is
    // read)
    if (!word || __atomic_load_n(word, __ATOMIC_SEQ_CST) != kPoison)
      return false;
    if (const char* next = watch_next_.load(std::memory_order_relaxed))
      __builtin_prefetch(next, 0, 3);
    const uint32_t left = quiet_left_.load(std::memory_order_relaxed);
    if (!left ||
        (__atomic_load_n(bell0_, __ATOMIC_RELAXED) &
         ~watch_bits_.load(std::memory_order_relaxed)) ||
        local_.any() || nnetwork_.load(std::memory_order_relaxed) > 0 ||
        jobs_.any())
      return false;
    quiet_left_.store(left - 1, std::memory_order_relaxed);
    return true;
  }

  // poll_comp's poll under the consumer lock (out of line: a quiet poll
  // needs none of its registers)
  [[gnu::noinline]] size_t poll_locked(cqe_t* out, size_t max, char* scratch,
                                       size_t scratch_size);

  // At the end of a locked poll that found nothing (under lock_): arms the
  // quiet polls when the device is in the state they check (one doorbell
  // word, one hot ring or none, nothing pending), else disarms them.
  void arm_quiet();

  // delivery completions of post_send_network: the consumer's published
  // head has passed the message
  void check_network();

  // Drains the rings with messages: the doorbell's bits and pending_.
  size_t drain(cqe_t* out, size_t max);

  uint64_t* bell_word(size_t w) const
  {
    return reinterpret_cast<uint64_t*>(seg_ + lay_.off_bell + 64 * w);
  }

  // Handles the messages of ring r while there is room for completions:
  // a message (kMsg) up to kCopyMax is copied into the scratch buffer and
  // consumed (here, while the scratch has kCopyMax bytes left), a larger
  // one lent in place, both as message cqes; every other type is handled
  // by handle_other and consumed; then publishes the ring's head, unless it
  // lent messages (the ring goes in lent_, release publishes). The common case
  // works on local copies of the ring's consumer state and of the scratch
  // position (registers: the copy into the scratch may alias any member).
  // Returns the completions' count (n before it) and whether the ring was seen
  // empty, in registers.
  struct drained_t {
    size_t n;
    bool empty;
  };
  drained_t drain_ring(int r, cqe_t* out, size_t max, size_t n);

  // Cools down the rings `cool` of doorbell word w, hot ones idle for
  // idle_polls_ polls: their bits cleared (doorbell_cool), then one more
  // peek each (those with a message go into *pending); returns the word's
  // hot rings after it.
  [[gnu::noinline]] uint64_t cool_down(size_t w, uint64_t hot, uint64_t cool,
                                       uint64_t* pending);

  // A ring message drain_ring does not copy itself: a kMsg copied into
  // the scratch's last bytes or lent (or, in a raw poll, delivered into a
  // posted receive), or RMA data, immediate data, acks; `m` by value, so that
  // the common path keeps its message in registers. False when the message must
  // stay in the ring (a raw poll with no receive posted).
  [[gnu::noinline]] bool handle_other(int r, ring_consumer_t::msg_t m,
                                      cqe_t* out, size_t* n);

  // the next receive posted by the raw layer, if any
  bool pop_recv(posted_recv_t* rv);

  // gives the lent messages back: publishes their rings (under lock_)
  void publish_lent()
  {
    for (uint32_t i = 0; i < nlent_; ++i) rx_[lent_[i]].publish();
    nlent_ = 0;
  }

  const config_t cfg_;
  const layout_t lay_;
  std::string name_;
  char* seg_ = nullptr;
  bool unlinked_ = false;
  std::vector<peer_t> peers_;
  std::unique_ptr<tx_ring_t[]> tx_;
  size_t max_payload_ = 0;  // the rings' largest message (set at connect)
  std::atomic<int64_t> nnetwork_{0};
  // consumer side (under lock_)
  alignas(64) util::spinlock_t lock_;
  std::vector<ring_consumer_t> rx_;
  std::vector<uint64_t> pending_;  // rings left non-empty, not hot
  std::vector<uint64_t> hot_;      // rings polled directly, bits left set
  std::vector<uint32_t> idle_;     // a hot ring's polls in a row with nothing
  uint32_t idle_polls_ = cfg_.membarrier ? kIdlePollsHeavy : kIdlePolls;
  // rings whose messages the core holds (nlent_ of them, each once)
  std::unique_ptr<int[]> lent_;
  uint32_t nlent_ = 0;
  // the current poll's scratch buffer (messages up to kCopyMax), and its free
  // bytes; null in a raw poll
  char* scratch_ = nullptr;
  size_t scratch_left_ = 0;
  // where the poll whose lent messages the core holds wrote its cqes (it
  // holds lock_ until their release); else null. (Batches in use at once
  // are distinct arrays: a release for another batch never matches.)
  std::atomic<const cqe_t*> lent_at_{nullptr};
  local_cqes_t local_;
  job_engine_t jobs_;  // fallback transfers
  // The quiet polls (quiet(), poll_comp): an idle poll of a device whose
  // only hot ring (if any) is empty reads that ring's next header word and
  // the doorbell word, not the ring's consumer state, so it needs no lock:
  // no locked instruction per idle poll, and a message is seen sooner
  // (the poll is shorter). watch_: the word (kQuietWord when no ring is
  // hot), null when disarmed (the last locked poll found or lent
  // something, or left the device in another state); watch_bits_: the hot
  // ring's doorbell bit;
  // quiet_left_: the quiet polls left before a locked one, so that an
  // idle hot ring still cools down after idle_polls_ empty polls (the
  // next locked poll adds the spent ones to its idle count: quiet_budget_
  // at arming minus what is left, for ring watch_ring_, under lock_).
  alignas(64) std::atomic<const uint64_t*> watch_{nullptr};
  std::atomic<uint64_t> watch_bits_{0};
  // the line after the watched header's, read by each quiet poll when the
  // ring's last message was of at most kOwnMin slots (else null): the
  // next small message's payload continues there, and a poll that holds
  // it brings it back together with the header's line instead of after
  // it. (After a larger message the producer owns that line ahead,
  // ring.hpp own_next, and a read would only take it back.)
  std::atomic<const char*> watch_next_{nullptr};
  std::atomic<uint32_t> quiet_left_{0};
  uint32_t quiet_budget_ = 0;
  int watch_ring_ = -1;
  // the device has one doorbell word and its segment is unlinked: the
  // state quiet polls may be armed in (under lock_)
  bool quiet_ok_ = false;
  uint64_t* bell0_ = nullptr;  // bell_word(0)
  // the raw layer's posted receives, oldest first
  alignas(64) util::spinlock_t recv_lock_;
  std::deque<posted_recv_t> recvs_;
};

}  // namespace lci::net::shm

#endif  // LCI_NET_SHM_DEVICE_HPP
