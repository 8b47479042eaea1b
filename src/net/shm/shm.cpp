// The native shared-memory backend. See shm.hpp for the overview.
//
// Segment of one device (created by the device, mapped by every peer's
// device of the same index), in cache lines:
//
//   header      magic, sizes, owner pid, the owner's mapping address and a
//               probe word (the CMA probe reads it), then on its own line the
//               count of peers that have mapped the segment
//   doorbell    one 64-bit word per 64 sender ranks, each on its own line:
//               bit r%64 of word r/64 says "ring r may have messages"
//   heads       per sender ring, the consumer's published head (own line)
//   rings       per sender rank, ring_size bytes of 32-byte slots
//
// The segment's name is "/lci-shm-<pid>-<nonce>-<counter>". It is unlinked
// as soon as every peer has mapped it (the owner's poll sees the count of
// mappers reach rank_n - 1) or when the device is destroyed; lcrun removes
// the names of ranks killed by a signal, and the first native context of a
// process those of dead processes of its user (leftovers.hpp). Segments are
// created 0600 (fchmod after shm_open: the umask does not decide).
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
#include "net/shm/shm.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "net/shm/doorbell.hpp"
#include "net/shm/keys.hpp"
#include "net/shm/leftovers.hpp"
#include "net/shm/ring.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/spinlock.hpp"

namespace lci::net::shm
{
namespace
{

constexpr uint64_t kMagic = 0x4c43492d73686d34ull;  // "LCI-shm4"
// bytes of messages a device parks when no receive is posted
constexpr size_t kOverflowMax = size_t(4) << 20;
// polls in a row that find a hot ring empty before it cools down; with
// the membarrier (doorbell.hpp), whose interrupt stalls the other cores
// and so slows a busy peer's bandwidth, 64 times more: a hot idle ring
// costs a load per poll, a cool-down a system call
constexpr uint32_t kIdlePolls = 1024;
constexpr uint32_t kIdlePollsHeavy = 64 * kIdlePolls;

// message types in the rings
enum : uint16_t {
  kMsg = 1,        // send_copy / post_send*: the payload is the message
  kImm = 2,        // a CMA writeimm landed: payload = the 8-byte imm
  kWriteData = 3,  // fallback write: chunk_hdr_t + data for the target
  kWriteAck = 4,   // fallback write done at the target: payload = ctx
  kReadReq = 5,    // fallback read: read_req_t
  kReadData = 6,   // fallback read data for the initiator: chunk_hdr_t+data
};

// a fallback data chunk: copy the data to `addr` in the receiver
struct chunk_hdr_t {
  uint64_t addr;
  uint64_t ctx;  // the initiator's operation
  uint64_t imm;
  uint32_t flags;  // kLast, kHasImm
  uint32_t pad_;
};
constexpr uint32_t kLast = 1, kHasImm = 2;

struct read_req_t {
  uint64_t raddr;  // in the target
  uint64_t laddr;  // in the initiator
  uint64_t size;
  uint64_t ctx;
};

struct seg_header_t {
  uint64_t magic;
  uint64_t nranks;
  uint64_t ring_bytes;
  uint64_t owner_pid;
  uint64_t owner_va;    // where the owner mapped the segment
  uint64_t probe_word;  // a random value, read by the peers' CMA probe
  // 1: the owner issues a membarrier when it cools rings down, so senders
  // may publish with plain stores (doorbell.hpp)
  uint64_t heavy_cool;
  uint64_t owner_pidns;          // the owner's pid namespace (leftovers.hpp)
  alignas(64) uint64_t nmapped;  // peers that mapped the segment
};

static_assert(offsetof(seg_header_t, owner_pid) == owner_words_t::kPidOffset &&
                  offsetof(seg_header_t, owner_pidns) ==
                      owner_words_t::kPidnsOffset,
              "the fields reclaim_leftovers reads");

struct layout_t {
  size_t nwords, off_bell, off_ctrl, off_rings, ring_bytes, total;
  layout_t(size_t n, size_t ring)
  {
    nwords = (n + 63) / 64;
    off_bell = sizeof(seg_header_t);
    off_ctrl = off_bell + 64 * nwords;
    off_rings = (off_ctrl + 64 * n + 4095) / 4096 * 4096;
    ring_bytes = ring;
    total = off_rings + n * ring;
  }
};

uint64_t nonce()
{
  static const uint64_t n = static_cast<uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count());
  return n;
}

// process_vm_writev / readv of the whole range (the kernel may copy less
// than asked); false when the kernel refuses
bool cma(pid_t pid, void* local, uint64_t remote, size_t size, bool write)
{
  char* l = static_cast<char*>(local);
  while (size > 0) {
    iovec li{l, size};
    iovec ri{reinterpret_cast<void*>(remote), size};
    ssize_t n = write ? process_vm_writev(pid, &li, 1, &ri, 1, 0)
                      : process_vm_readv(pid, &li, 1, &ri, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    l += n;
    remote += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Maps the pages of [p, p + size) now, allocating them in the segment if
// needed, instead of one page fault per 4 KiB while the ring first fills
// (with many ranks, every round of an all-to-all would fault until every
// ring had wrapped). Best effort: MADV_POPULATE_WRITE needs Linux 5.14.
void prefault(void* p, size_t size)
{
#ifdef MADV_POPULATE_WRITE
  (void)madvise(p, size, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)size;
#endif
}

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

// the producer side of the ring this rank owns in a peer's segment
struct alignas(64) tx_ring_t {
  util::spinlock_t lock;
  // fallback transfers queued toward this peer (on the lock's line: every
  // push reads it): a later message waits behind them (retry), so that
  // messages and transfers arrive in the order posted (a FIN after a put
  // lands after the put's data)
  std::atomic<uint32_t> njobs{0};
  ring_producer_t prod;
  uint64_t* bell = nullptr;  // the peer's doorbell word holding our bit
  uint64_t bit = 0;
  // post_send_network sends waiting for the consumer's head: (end, ctx)
  std::deque<std::pair<uint64_t, void*>> network;

  // a message posted now would overtake a queued fallback transfer
  bool jobs_ahead() const { return njobs.load(std::memory_order_acquire) != 0; }
};

struct peer_t {
  void* base = nullptr;  // the peer's segment, mapped here
  size_t size = 0;
  pid_t pid = 0;  // kept for peer failure detection
  bool cma = false;
};

// a fallback transfer the device pushes through a ring piece by piece
struct tx_job_t {
  int rank;
  uint16_t type;  // kWriteData, kReadData or kWriteAck
  const char* src;
  uint64_t remaining;
  uint64_t dst;
  uint64_t ctx;
  uint64_t imm;
  bool has_imm;
};

struct posted_recv_t {
  void* buf;
  size_t size;
  void* ctx;
};

class shm_device_t final : public net_device_t
{
 public:
  explicit shm_device_t(const config_t& cfg)
      : cfg_(cfg), lay_(static_cast<size_t>(cfg.rank_n), cfg.ring_bytes)
  {
    static std::atomic<uint64_t> counter{0};
    name_ = "/lci-shm-" + std::to_string(::getpid()) + "-" +
            std::to_string(nonce()) + "-" + std::to_string(counter++);
    seg_ = create_segment(name_, lay_.total, "alloc_device",
                          "shared-memory segment");
    prefault(seg_, lay_.total);
    auto* h = reinterpret_cast<seg_header_t*>(seg_);
    h->nranks = static_cast<uint64_t>(cfg.rank_n);
    h->ring_bytes = cfg.ring_bytes;
    h->owner_pid = static_cast<uint64_t>(::getpid());
    h->owner_pidns = pid_namespace();
    h->owner_va = reinterpret_cast<uintptr_t>(seg_);
    h->probe_word = nonce() ^ (reinterpret_cast<uintptr_t>(seg_) << 7) ^
                    counter.load() * 0x9E3779B97F4A7C15ull;
    h->heavy_cool = cfg.membarrier ? 1 : 0;
    store_release(&h->magic, kMagic);
    const uint64_t nslots = cfg.ring_bytes / kSlot;
    rx_.resize(static_cast<size_t>(cfg.rank_n));
    for (int r = 0; r < cfg.rank_n; ++r)
      rx_[r] = ring_consumer_t(ring_of(seg_, r), nslots, ctrl_of(seg_, r));
    pending_.assign(lay_.nwords, 0);
    hot_.assign(lay_.nwords, 0);
    idle_.assign(static_cast<size_t>(cfg.rank_n), 0);
    chunk_ = std::min<size_t>(cfg.ring_bytes / 4, 65536) - kSlot;
  }

  ~shm_device_t() override
  {
    for (int r = 0; r < static_cast<int>(peers_.size()); ++r)
      if (r != cfg_.rank_me && peers_[r].base)
        munmap(peers_[r].base, peers_[r].size);
    if (seg_) munmap(seg_, lay_.total);
    if (!unlinked_) shm_unlink(name_.c_str());
  }

  std::string get_address() override
  {
    return name_ + "\n" + std::to_string(::getpid()) + "\n" + cfg_.node + "\n" +
           cfg_.keys->name();
  }

  void connect(const std::vector<std::string>& addrs) override
  {
    const int n = cfg_.rank_n;
    if (static_cast<int>(addrs.size()) != n)
      util::throw_fatal("alloc_device: ", addrs.size(), " addresses for ", n,
                        " ranks");
    const std::string& me = cfg_.node;
    peers_.resize(static_cast<size_t>(n));
    tx_ = std::unique_ptr<tx_ring_t[]>(new tx_ring_t[static_cast<size_t>(n)]);
    const uint64_t nslots = cfg_.ring_bytes / kSlot;
    for (int r = 0; r < n; ++r) {
      size_t a = addrs[r].find('\n');
      size_t b = a == std::string::npos ? a : addrs[r].find('\n', a + 1);
      size_t c = b == std::string::npos ? b : addrs[r].find('\n', b + 1);
      if (c == std::string::npos)
        util::throw_fatal("alloc_device: rank ", r,
                          " sent no native shm address (is its "
                          "LCI_ATTR_BACKEND shm too?)");
      std::string name = addrs[r].substr(0, a);
      pid_t pid = static_cast<pid_t>(std::stol(addrs[r].substr(a + 1, b)));
      std::string node = addrs[r].substr(b + 1, c - b - 1);
      if (node != me)
        util::throw_fatal("alloc_device: rank ", r, " runs on another node (",
                          node, ", this is ", me,
                          "); the native shm backend alone needs all ranks on "
                          "one node (use LCI_ATTR_BACKEND=auto or hybrid)");
      peer_t& p = peers_[r];
      p.pid = pid;
      if (r == cfg_.rank_me) {
        p.base = seg_;
        p.size = lay_.total;
      } else {
        map_peer(r, name, &p);
        // before this rank counts as a mapper of the peer's segment: the
        // peer unlinks its table's name with its segments' (try_unlink)
        cfg_.keys->map_peer(r, addrs[r].substr(c + 1));
        // the ring this rank fills in the peer's segment
        prefault(ring_of(static_cast<char*>(p.base), cfg_.rank_me),
                 cfg_.ring_bytes);
      }
      auto* h = reinterpret_cast<seg_header_t*>(p.base);
      if (load_acquire(&h->magic) != kMagic || h->nranks != uint64_t(n) ||
          h->ring_bytes != cfg_.ring_bytes)
        util::throw_fatal("alloc_device: rank ", r, "'s segment ", name,
                          " does not match this one (ranks ", h->nranks,
                          ", ring ", h->ring_bytes,
                          " bytes: is LCI_ATTR_SHM_RING_SIZE the same on "
                          "every rank?)");
      // single-copy RMA when the kernel lets us read the peer's memory
      if (cfg_.use_cma) {
        uint64_t v = 0;
        p.cma = cma(pid, &v, h->owner_va + offsetof(seg_header_t, probe_word),
                    sizeof(v), false) &&
                v == h->probe_word;
      }
      tx_ring_t& t = tx_[r];
      char* base = static_cast<char*>(p.base);
      // plain-store stamps when both sides take part in the membarrier
      t.prod = ring_producer_t(
          ring_of(base, cfg_.rank_me), nslots, ctrl_of(base, cfg_.rank_me),
          cfg_.membarrier && h->heavy_cool ? publish_t::release
                                           : publish_t::seq_cst);
      t.bell = reinterpret_cast<uint64_t*>(base + lay_.off_bell +
                                           64 * (cfg_.rank_me / 64));
      t.bit = uint64_t(1) << (cfg_.rank_me % 64);
      if (r != cfg_.rank_me)
        __atomic_fetch_add(&h->nmapped, 1, __ATOMIC_RELEASE);
    }
    try_unlink();
  }

  // Every peer has mapped the segment by now: its name can go at once, so a
  // rank that crashes later leaves nothing in /dev/shm.
  void connected() override
  {
    if (!unlinked_) try_unlink();
  }

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
                            void* ctx) override
  {
    check_size(size);
    tx_ring_t& t = tx_[rank];
    if (!t.lock.try_lock()) return errorcode_t::retry_lock;
    bool ok = !t.jobs_ahead() && t.prod.push(kMsg, buf, size);
    if (ok) {
      t.network.emplace_back(t.prod.tail(), ctx);
      nnetwork_.fetch_add(1, std::memory_order_relaxed);
      ring_bell(t);
    }
    t.lock.unlock();
    return ok ? errorcode_t::posted : errorcode_t::retry_nomem;
  }

  error_t post_recv(void* buf, size_t size, void* ctx) override
  {
    util::spin_guard_t g(recv_lock_);
    recvs_.push_back(posted_recv_t{buf, size, ctx});
    return errorcode_t::posted;
  }

  error_t post_write(int rank, const void* buf, size_t size, void*,
                     const remote_t& remote, void* ctx, bool) override
  {
    const uint64_t raddr = remote.base + remote.disp;
    if (refuse(rank, remote, raddr, size, cqe_t::kind_t::write, ctx))
      return errorcode_t::posted;
    if (by_cma(rank, size)) {
      // CMA copies synchronously: delivered on return
      if (cma(peers_[rank].pid, const_cast<void*>(buf), raddr, size, true))
        return errorcode_t::done;
      complete_local(cqe_t::kind_t::write, ctx, "process_vm_writev failed");
      return errorcode_t::posted;
    }
    add_job(tx_job_t{rank, kWriteData, static_cast<const char*>(buf), size,
                     raddr, reinterpret_cast<uintptr_t>(ctx), 0, false});
    return errorcode_t::posted;
  }

  error_t post_writeimm(int rank, const void* buf, size_t size, void*,
                        const remote_t& remote, uint64_t imm,
                        void* ctx) override
  {
    const uint64_t raddr = remote.base + remote.disp;
    if (refuse(rank, remote, raddr, size, cqe_t::kind_t::write, ctx))
      return errorcode_t::posted;
    if (!by_cma(rank, size)) {
      add_job(tx_job_t{rank, kWriteData, static_cast<const char*>(buf), size,
                       raddr, reinterpret_cast<uintptr_t>(ctx), imm, true});
      return errorcode_t::posted;
    }
    // room for the notification first, so that a full ring is a retry
    // before any data moved
    tx_ring_t& t = tx_[rank];
    if (!t.lock.try_lock()) return errorcode_t::retry_lock;
    if (t.jobs_ahead() || !t.prod.fits(sizeof(imm))) {
      t.lock.unlock();
      return errorcode_t::retry_nomem;
    }
    bool ok = cma(peers_[rank].pid, const_cast<void*>(buf), raddr, size, true);
    if (ok) {
      t.prod.push(kImm, &imm, sizeof(imm));
      ring_bell(t);
    }
    t.lock.unlock();
    if (ok) return errorcode_t::done;
    complete_local(cqe_t::kind_t::write, ctx, "process_vm_writev failed");
    return errorcode_t::posted;
  }

  error_t post_read(int rank, void* buf, size_t size, void*,
                    const remote_t& remote, void* ctx) override
  {
    const uint64_t raddr = remote.base + remote.disp;
    if (refuse(rank, remote, raddr, size, cqe_t::kind_t::read, ctx))
      return errorcode_t::posted;
    if (by_cma(rank, size)) {
      if (cma(peers_[rank].pid, buf, raddr, size, false))
        return errorcode_t::done;
      complete_local(cqe_t::kind_t::read, ctx, "process_vm_readv failed");
      return errorcode_t::posted;
    }
    read_req_t req{raddr, reinterpret_cast<uintptr_t>(buf), size,
                   reinterpret_cast<uintptr_t>(ctx)};
    return push(rank, kReadReq, &req, sizeof(req), nullptr, 0,
                errorcode_t::posted);
  }

  size_t poll_comp(cqe_t* out, size_t max, char* scratch,
                   size_t scratch_size) override
  {
    if (!lock_.try_lock()) return 0;
    scratch_ = scratch;
    scratch_left_ = scratch ? scratch_size : 0;
    size_t n = 0;
    if (nlocal_.load(std::memory_order_relaxed) > 0) n = take_local(out, max);
    if (nnetwork_.load(std::memory_order_relaxed) > 0) check_network();
    if (njobs_.load(std::memory_order_relaxed) > 0) run_jobs();
    if (!unlinked_) try_unlink();
    if (!overflow_.empty()) n += drain_overflow(out + n, max - n);
    n += drain(out + n, max - n);
    lock_.unlock();
    return n;
  }

  // fallback transfers (a peer's get, a write's ack) not pushed yet
  bool busy() override { return njobs_.load(std::memory_order_acquire) != 0; }

  std::string debug_state() override
  {
    std::string s;
    bool locked = false;
    for (int i = 0; i < 100000 && !locked; ++i) locked = lock_.try_lock();
    if (!locked) s += "(consumer lock busy) ";
    for (int r = 0; r < cfg_.rank_n && locked; ++r) {
      const size_t w = static_cast<size_t>(r) / 64;
      const uint64_t bit = uint64_t(1) << (r % 64);
      ring_consumer_t::msg_t m{};
      bool full = rx_[r].peek(&m);
      s += "in[" + std::to_string(r) + "] head " +
           std::to_string(rx_[r].head()) + (full ? " msg type " : " empty") +
           (full ? std::to_string(m.type) + " len " + std::to_string(m.length)
                 : "") +
           " bell " +
           std::to_string(
               (__atomic_load_n(bell_word(w), __ATOMIC_SEQ_CST) & bit) != 0) +
           " hot " + std::to_string((hot_[w] & bit) != 0) + " pending " +
           std::to_string((pending_[w] & bit) != 0) + " idle " +
           std::to_string(idle_[r]) + "; ";
    }
    if (locked) {
      s += "parked " + std::to_string(overflow_.size()) + " (" +
           std::to_string(overflow_bytes_) + " B); ";
      lock_.unlock();
    }
    {
      util::spin_guard_t g(recv_lock_);
      s += "recvs " + std::to_string(recvs_.size()) + "; ";
    }
    {
      util::spin_guard_t g(local_lock_);
      s += "local cqes " + std::to_string(local_.size()) + "; ";
    }
    {
      util::spin_guard_t g(jobs_lock_);
      s += "jobs " + std::to_string(jobs_.size()) + "; ";
    }
    for (int r = 0; r < cfg_.rank_n; ++r) {
      if (r == cfg_.rank_me) continue;
      tx_ring_t& t = tx_[r];
      util::spin_guard_t g(t.lock);
      s += "out[" + std::to_string(r) + "] tail " +
           std::to_string(t.prod.tail()) + " consumed " +
           std::to_string(t.prod.consumed(t.prod.tail())) + " network " +
           std::to_string(t.network.size()) + "; ";
    }
    return s;
  }

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

  void map_peer(int r, const std::string& name, peer_t* p)
  {
    int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) open_failed(r, name, p->pid, errno);
    struct stat st;
    if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != lay_.total) {
      ::close(fd);
      util::throw_fatal("alloc_device: rank ", r, "'s segment ", name,
                        " has the wrong size (is LCI_ATTR_SHM_RING_SIZE the "
                        "same on every rank?)");
    }
    void* m =
        mmap(nullptr, lay_.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED)
      util::throw_fatal("alloc_device: cannot map rank ", r, "'s segment ",
                        name, ": ", std::strerror(errno));
    p->base = m;
    p->size = lay_.total;
  }

  // The error for a peer's segment that cannot be opened. The peer's
  // segment exists from before its address was published until every peer
  // has mapped it, so a missing segment while its owner runs is a bug of
  // ours; an owner that is gone, or a different /dev/shm, is the setup.
  [[noreturn]] void open_failed(int r, const std::string& name, pid_t pid,
                                int err)
  {
    const std::string what = "alloc_device: cannot open rank " +
                             std::to_string(r) + "'s shared-memory segment " +
                             name + ": " + std::strerror(err);
    if (err != ENOENT)
      util::throw_fatal(what,
                        " (expected a segment this rank may open "
                        "read-write: do all ranks run as the same user?)");
    errno = 0;
    const bool alive = ::kill(pid, 0) == 0 || errno == EPERM;
    if (alive)
      util::throw_fatal(what,
                        "; expected it to exist until every peer has "
                        "mapped it, but rank ",
                        r, " (pid ", pid,
                        ") is alive "
                        "on this node (",
                        cfg_.node,
                        ") and its segment is "
                        "gone: a bug in LCI's start-up, please report it");
    util::throw_fatal(what, "; rank ", r, " (pid ", pid,
                      ") is not running "
                      "as seen from here: it exited or crashed during "
                      "start-up, or it runs on another node or in another "
                      "container with the same host name (the native shm "
                      "backend needs every rank on one node sharing /dev/shm "
                      "and process ids; LCI_ATTR_BACKEND=ofi works anywhere)");
  }

  // unlinks the segment's name once every peer has mapped it
  void try_unlink()
  {
    auto* h = reinterpret_cast<seg_header_t*>(seg_);
    if (__atomic_load_n(&h->nmapped, __ATOMIC_ACQUIRE) ==
        static_cast<uint64_t>(cfg_.rank_n - 1)) {
      shm_unlink(name_.c_str());
      unlinked_ = true;
      cfg_.keys->try_unlink();
    }
  }

  // The target's registration table refuses the transfer (keys.hpp): its
  // operation completes with the reason, flagged as a refusal (the peer is
  // fine), and no byte moves.
  bool refuse(int rank, const remote_t& remote, uint64_t raddr, size_t size,
              cqe_t::kind_t kind, void* ctx)
  {
    const char* why = cfg_.keys->check(rank, remote.rkey, raddr, size);
    if (__builtin_expect(why == nullptr, 1)) return false;
    complete_local(kind, ctx, why, true);
    return true;
  }

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

  // after a push: the doorbell protocol
  static void ring_bell(tx_ring_t& t)
  {
    doorbell_ring(t.bell, t.bit, t.prod.mode());
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
    if (pushed) ring_bell(t);
    t.lock.unlock();
    return pushed ? error_t(ok) : error_t(errorcode_t::retry_nomem);
  }

  void complete_local(cqe_t::kind_t kind, void* ctx,
                      const char* error = nullptr, bool refused = false)
  {
    cqe_t c{kind, ctx, 0, 0, error};
    c.refused = refused;
    util::spin_guard_t g(local_lock_);
    local_.push_back(c);
    nlocal_.store(local_.size(), std::memory_order_relaxed);
  }

  size_t take_local(cqe_t* out, size_t max)
  {
    util::spin_guard_t g(local_lock_);
    size_t n = 0;
    while (n < max && !local_.empty()) {
      out[n++] = local_.front();
      local_.pop_front();
    }
    nlocal_.store(local_.size(), std::memory_order_relaxed);
    return n;
  }

  // delivery completions of post_send_network: the consumer's published
  // head has passed the message
  void check_network()
  {
    for (int r = 0; r < cfg_.rank_n; ++r) {
      tx_ring_t& t = tx_[r];
      if (!t.lock.try_lock()) continue;
      while (!t.network.empty() && t.prod.consumed(t.network.front().first)) {
        complete_local(cqe_t::kind_t::send, t.network.front().second);
        t.network.pop_front();
        nnetwork_.fetch_sub(1, std::memory_order_relaxed);
      }
      t.lock.unlock();
    }
  }

  // Queues a fallback transfer and pushes what fits at once: the peer may
  // depend on it (an ack) while this device's owner no longer polls it.
  void add_job(const tx_job_t& j)
  {
    tx_[j.rank].njobs.fetch_add(1, std::memory_order_relaxed);
    {
      util::spin_guard_t g(jobs_lock_);
      jobs_.push_back(j);
      njobs_.store(jobs_.size(), std::memory_order_relaxed);
    }
    run_jobs();
  }

  // pushes the fallback transfers' pieces that fit into their rings
  void run_jobs()
  {
    if (!jobs_lock_.try_lock()) return;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (run_job(*it)) {
        tx_[it->rank].njobs.fetch_sub(1, std::memory_order_release);
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
    njobs_.store(jobs_.size(), std::memory_order_relaxed);
    jobs_lock_.unlock();
  }

  // true when the job is done
  bool run_job(tx_job_t& j)
  {
    tx_ring_t& t = tx_[j.rank];
    if (!t.lock.try_lock()) return false;
    bool pushed = false;
    if (j.type == kWriteAck) {
      if (t.prod.push(kWriteAck, &j.ctx, sizeof(j.ctx))) {
        pushed = true;
        j.remaining = 0;
      }
    } else {
      // at least one chunk per job (a 0-byte transfer still completes)
      do {
        size_t len =
            static_cast<size_t>(std::min<uint64_t>(j.remaining, chunk_));
        chunk_hdr_t h{j.dst, j.ctx, j.imm, 0, 0};
        if (len == j.remaining) h.flags |= kLast;
        if (j.has_imm) h.flags |= kHasImm;
        if (!t.prod.push(j.type, &h, sizeof(h), j.src, len)) break;
        pushed = true;
        j.src += len;
        j.dst += len;
        j.remaining -= len;
        if (h.flags & kLast) {
          j.type = 0;  // done
          break;
        }
      } while (true);
    }
    if (pushed) ring_bell(t);
    t.lock.unlock();
    return j.type == 0 || (j.type == kWriteAck && j.remaining == 0);
  }

  // Drains the rings with messages: the doorbell's bits and pending_.
  // (The words' hot and pending bits are kept in locals meanwhile: the
  // copies into the scratch buffer may alias any member.)
  size_t drain(cqe_t* out, size_t max)
  {
    size_t n = 0;
    const size_t nwords = lay_.nwords;
    for (size_t w = 0; w < nwords; ++w) {
      uint64_t* bell = bell_word(w);
      // bits rung since the last poll: those rings become hot (their bits
      // stay set, so their senders skip the read-modify-write)
      uint64_t hot = hot_[w] | __atomic_load_n(bell, __ATOMIC_RELAXED);
      uint64_t bits = hot | pending_[w];
      uint64_t pending = 0;
      uint64_t cool = 0;  // hot rings idle for idle_polls_ polls
      while (bits) {
        int b = __builtin_ctzll(bits);
        bits &= bits - 1;
        const uint64_t bit = uint64_t(1) << b;
        int r = static_cast<int>(w * 64) + b;
        if (n >= max) {
          if (!(hot & bit)) pending |= bit;
          continue;
        }
        size_t before = n;
        bool empty = drain_ring(r, out, max, &n);
        if (!(hot & bit)) {
          if (!empty) pending |= bit;
          continue;
        }
        if (n > before || !empty) {
          idle_[r] = 0;
        } else if (++idle_[r] >= idle_polls_) {
          idle_[r] = 0;
          cool |= bit;
        }
      }
      if (cool) {
        // cool down: clear the bits (one system call for all of them when
        // heavy), then look once more (doorbell.hpp); if the membarrier
        // fails, the rings stay hot and no ring cools down any more
        if (!doorbell_cool(bell, cool, cfg_.membarrier)) {
          idle_polls_ = UINT32_MAX;
          cool = 0;
        }
        hot &= ~cool;
        for (uint64_t c = cool; c; c &= c - 1) {
          int r = static_cast<int>(w * 64) + __builtin_ctzll(c);
          ring_consumer_t::msg_t m;
          if (rx_[r].peek(&m)) pending |= c & -c;
        }
      }
      hot_[w] = hot;
      pending_[w] = pending;
    }
    return n;
  }

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
  bool drain_ring(int r, cqe_t* out, size_t max, size_t* pn)
  {
    ring_consumer_t c = rx_[r];
    size_t n = *pn;
    char* scratch = scratch_;
    size_t left = scratch_left_;
    bool parked = !overflow_.empty();
    bool empty = false;
    for (int budget = 64; budget > 0 && n < max; --budget) {
      ring_consumer_t::msg_t m;
      if (!c.peek(&m)) {
        empty = true;
        break;
      }
      const size_t room = (m.length + 15) & ~size_t(15);
      if (__builtin_expect(m.type == kMsg && !parked && room <= left, 1)) {
        // in place: into the poller's scratch (no receive buffer, no
        // packet). One that fits its header slot (24 bytes) is copied as
        // a fixed 24 bytes: the slot has them, and so has the scratch when
        // 24 bytes are left (the copy past the length is never read).
        constexpr size_t kInSlot = kSlot - kRingHeader;
        if (m.length <= kInSlot && left >= kInSlot)
          std::memcpy(scratch, m.payload, kInSlot);
        else
          std::memcpy(scratch, m.payload, m.length);
        out[n++] = cqe_t{cqe_t::kind_t::message, scratch, m.length, 0, nullptr};
        scratch += room;
        left -= room;
        c.pop(m);
        continue;
      }
      rx_[r] = c;
      scratch_ = scratch;
      scratch_left_ = left;
      const bool ok = handle_other(r, m, out, &n);
      c = rx_[r];
      scratch = scratch_;
      left = scratch_left_;
      parked = !overflow_.empty();
      if (!ok) break;  // no receive posted
      c.pop(m);
    }
    c.publish();
    rx_[r] = c;
    scratch_ = scratch;
    scratch_left_ = left;
    *pn = n;
    return empty;
  }

  bool pop_recv(posted_recv_t* rv)
  {
    util::spin_guard_t g(recv_lock_);
    if (recvs_.empty()) return false;
    *rv = recvs_.front();
    recvs_.pop_front();
    return true;
  }

  static cqe_t deliver(const posted_recv_t& rv, const void* data, size_t len)
  {
    const char* err = nullptr;
    if (len > rv.size) {
      err = "message larger than the receive buffer";
      len = rv.size;
    }
    std::memcpy(rv.buf, data, len);
    return cqe_t{cqe_t::kind_t::recv, rv.ctx, len, 0, err};
  }

  // parked messages into receives posted since
  size_t drain_overflow(cqe_t* out, size_t max)
  {
    size_t n = 0;
    posted_recv_t rv;
    while (n < max && !overflow_.empty() && pop_recv(&rv)) {
      const std::string& s = overflow_.front();
      out[n++] = deliver(rv, s.data(), s.size());
      overflow_bytes_ -= s.size();
      overflow_.pop_front();
    }
    return n;
  }

  // A message that does not go in place (drain_ring has those): false when
  // it must stay (no receive buffer posted).
  [[gnu::noinline]] bool handle_other(int r, const ring_consumer_t::msg_t& m,
                                      cqe_t* out, size_t* n)
  {
    switch (m.type) {
      case kMsg: {
        posted_recv_t rv;
        if (overflow_.empty() && pop_recv(&rv)) {
          out[(*n)++] = deliver(rv, m.payload, m.length);
          return true;
        }
        // no receive posted: park a copy, within a bound, so that the
        // messages behind it (immediate data, acks) are not held up
        if (overflow_bytes_ + m.length > kOverflowMax) return false;
        overflow_.emplace_back(reinterpret_cast<const char*>(m.payload),
                               m.length);
        overflow_bytes_ += m.length;
        return true;
      }
      case kImm: {
        uint64_t imm;
        std::memcpy(&imm, m.payload, sizeof(imm));
        out[(*n)++] =
            cqe_t{cqe_t::kind_t::remote_write, nullptr, 0, imm, nullptr};
        return true;
      }
      case kWriteData:
      case kReadData: {
        chunk_hdr_t h;
        std::memcpy(&h, m.payload, sizeof(h));
        size_t len = m.length - sizeof(h);
        if (len)
          std::memcpy(reinterpret_cast<void*>(h.addr), m.payload + sizeof(h),
                      len);
        if (!(h.flags & kLast)) return true;
        if (m.type == kReadData) {
          out[(*n)++] = cqe_t{cqe_t::kind_t::read,
                              reinterpret_cast<void*>(h.ctx), 0, 0, nullptr};
          return true;
        }
        if (h.flags & kHasImm)
          out[(*n)++] =
              cqe_t{cqe_t::kind_t::remote_write, nullptr, 0, h.imm, nullptr};
        add_job(tx_job_t{r, kWriteAck, nullptr, 1, 0, h.ctx, 0, false});
        return true;
      }
      case kWriteAck: {
        uint64_t ctx;
        std::memcpy(&ctx, m.payload, sizeof(ctx));
        out[(*n)++] = cqe_t{cqe_t::kind_t::write, reinterpret_cast<void*>(ctx),
                            0, 0, nullptr};
        return true;
      }
      case kReadReq: {
        read_req_t q;
        std::memcpy(&q, m.payload, sizeof(q));
        add_job(tx_job_t{r, kReadData, reinterpret_cast<const char*>(q.raddr),
                         q.size, q.laddr, q.ctx, 0, false});
        return true;
      }
      default:
        util::throw_fatal("native shm backend: unknown message type ", m.type,
                          " from rank ", r, " (corrupted ring)");
    }
  }

  const config_t cfg_;
  const layout_t lay_;
  std::string name_;
  char* seg_ = nullptr;
  bool unlinked_ = false;
  size_t chunk_ = 0;  // fallback chunk payload
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
  std::deque<std::string> overflow_;
  size_t overflow_bytes_ = 0;
  // the current poll's scratch buffer (message cqes), and its free bytes
  char* scratch_ = nullptr;
  size_t scratch_left_ = 0;
  // local completions (network-level sends, failed CMA transfers,
  // refused transfers)
  alignas(64) util::spinlock_t local_lock_;
  std::atomic<size_t> nlocal_{0};
  std::deque<cqe_t> local_;
  alignas(64) util::spinlock_t recv_lock_;
  std::deque<posted_recv_t> recvs_;
  alignas(64) util::spinlock_t jobs_lock_;
  std::atomic<size_t> njobs_{0};
  std::deque<tx_job_t> jobs_;
};

class shm_context_t final : public context_t
{
 public:
  shm_context_t(const runtime_attr_t& attr, int rank_me, int rank_n,
                const std::string& node)
  {
    cfg_.rank_me = rank_me;
    cfg_.rank_n = rank_n;
    cfg_.node = node;
    cfg_.use_cma = attr.shm_cma;
    cfg_.cma_min = attr.shm_cma_threshold;
    cfg_.membarrier = attr.shm_membarrier && asym_fence_register();
    // a power of two that holds two of the largest packets
    size_t want = std::max<size_t>(attr.shm_ring_size,
                                   2 * (attr.packet_size + 2 * kSlot));
    // a header word holds lengths below 2^28 (ring.hpp): 128 MiB at most
    constexpr size_t kMaxRing = size_t(1) << 27;
    if (want > kMaxRing)
      util::throw_fatal("alloc_runtime: shm_ring_size ", attr.shm_ring_size,
                        " (with packet_size ", attr.packet_size,
                        ") needs a ring above the native shm backend's "
                        "largest, ",
                        kMaxRing, " bytes");
    size_t ring = 4096;
    while (ring < want) ring *= 2;
    cfg_.ring_bytes = ring;
    caps_.backend = "shm";
    caps_.provider = "shm-native";
    caps_.max_inject_size = ring / 2 - kSlot;
    caps_.max_msg_size = size_t(1) << 30;
    caps_.network_completion = "delivery";
    caps_.rma = true;
    caps_.imm_data_size = 8;
    caps_.mr_local = false;
    caps_.rma_virtual = true;
    if (int n = reclaim_leftovers(kMagic, key_table_t::kMagic))
      LCI_LOG(info, "native shm backend: removed ", n,
              " segments of dead processes from /dev/shm");
    cfg_.keys = std::make_shared<key_table_t>(rank_me, rank_n, nonce());
    // keys of another process or runtime are unlikely to be live here
    next_key_.store(nonce() * 0x9E3779B97F4A7C15ull ^
                    static_cast<uint64_t>(::getpid()) << 40);
  }

  std::unique_ptr<net_device_t> alloc_device(const device_attr_t&) override
  {
    return std::make_unique<shm_device_t>(cfg_);
  }

  // Peers address memory by virtual address (CMA, or the target's own copy
  // in the fallback); the key is a counter, listed in the registration
  // table that the initiators check.
  net_mr_t register_memory(void* buf, size_t size, const char* call) override
  {
    return register_memory_key(
        buf, size, call, next_key_.fetch_add(1, std::memory_order_relaxed));
  }

  net_mr_t register_memory_key(void* buf, size_t size, const char*,
                               uint64_t rkey) override
  {
    net_mr_t out;
    out.handle = buf ? buf : this;
    out.rkey = rkey;
    out.rma_base = reinterpret_cast<uintptr_t>(buf);
    cfg_.keys->add(out.rkey, out.rma_base, size);
    nregistered_.fetch_add(1, std::memory_order_relaxed);
    return out;
  }

  void deregister_memory(net_mr_t* mr) override
  {
    if (mr->handle) {
      cfg_.keys->remove(mr->rkey);
      nregistered_.fetch_sub(1, std::memory_order_relaxed);
    }
    *mr = net_mr_t();
  }

 private:
  config_t cfg_{};
  std::atomic<uint64_t> next_key_{1};
};

}  // namespace

std::unique_ptr<context_t> alloc_context(const runtime_attr_t& attr,
                                         int rank_me, int rank_n,
                                         const std::string& node)
{
  return std::make_unique<shm_context_t>(attr, rank_me, rank_n, node);
}

}  // namespace lci::net::shm
