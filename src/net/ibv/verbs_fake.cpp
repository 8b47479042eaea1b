// The fake verbs layer (test only; see verbs.hpp): an RDMA device emulated
// between processes of one machine, with the semantics the backend relies
// on from a real one:
//   - each fake device (one per open) is a /dev/shm segment (mode 0600,
//     named after the pid) holding its memory-registration table and one
//     inbound ring per queue pair; a peer maps it when a queue pair is
//     connected to one of its queue pairs (the GID carries pid and segment
//     number; the QP number is the ring's slot);
//   - a send copies into the target queue pair's ring; the target's
//     poll_cq takes a buffer of the shared receive queue for it (a message
//     waits in the ring while the SRQ is empty, as RNR retry would);
//   - RDMA write and read check the target's registration table (rkey and
//     range) and copy with process_vm_writev / process_vm_readv; write with
//     immediate then queues the immediate in the ring, which consumes a
//     receive buffer at the target like the real thing;
//   - failures come back as error completions, and the queue pair then goes
//     to the error state and flushes what follows, as on hardware;
//   - with LCI_IBV_FAKE=check, stale registrations are detected: a real
//     registration pins the physical pages it found, so memory unmapped and
//     mapped again at the same address is no longer what it reads and
//     writes (silently). The fake records the physical frame of a
//     registration's first and last page (from /proc/<pid>/pagemap, which
//     shows frames only to a privileged process; elsewhere nothing is
//     checked) and fails any access through the registration whose pages
//     have other frames since: a send or a write from it, a receive into
//     it, a peer's write or read of it. Opt-in, as the kernel may move a
//     page that nothing pins (compaction), which would look the same;
//     check mode turns transparent huge pages off for the process, as
//     khugepaged would move such pages all the time.
// Completions of posts are made at post time (the copy is done by then).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "net/ibv/verbs.hpp"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels: EINVAL
#endif

namespace lci::net::ibv
{
namespace
{

constexpr uint32_t kMagic = 0x4c434946;  // "LCIF"
constexpr uint32_t kMaxMr = 1u << 16;
// Queue pairs of one fake device (one per rank for every LCI device of the
// runtime: devices x ranks at most). The segment is sparse: a ring costs
// memory only as far as its traffic has written it, so the bound is the
// address space every peer maps (kMaxQp MiB per fake device).
constexpr uint32_t kMaxQp = 1024;
constexpr uint64_t kRingBytes = 1u << 20;
constexpr uint32_t kMaxInline = 256;
constexpr uint64_t kMaxSend = kRingBytes / 4;  // largest send the ring takes
constexpr const char* kPrefix = "lci-fakeibv-";
// check mode: an access through a registration whose pages changed
constexpr const char* kStale =
    "stale registration: its pages were unmapped and mapped again (fake "
    "check)";

struct mr_entry_t {
  std::atomic<uint32_t> rkey;  // 0: free
  uint32_t pad;
  uint64_t addr;
  uint64_t len;
  // check mode: the physical frames of the first and last page at
  // registration (0: not recorded, nothing checked)
  uint64_t frame_first;
  uint64_t frame_last;
};

// The physical frame behind `addr` in process `pid`, 0 when unknown (not
// present, or frames hidden from an unprivileged reader).
uint64_t frame_of(int pid, uint64_t addr)
{
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const std::string path = "/proc/" + std::to_string(pid) + "/pagemap";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  uint64_t v = 0;
  const ssize_t n =
      pread(fd, &v, sizeof(v), static_cast<off_t>(addr / page * sizeof(v)));
  ::close(fd);
  if (n != static_cast<ssize_t>(sizeof(v)) || !(v >> 63)) return 0;
  return v & ((uint64_t(1) << 55) - 1);
}

// One queue pair's inbound ring: records of [rec_t][payload], 16-byte
// aligned; one producer (the peer queue pair, under its send mutex), one
// consumer (this process's poll_cq, under the CQ mutex).
struct ring_hdr_t {
  alignas(64) std::atomic<uint64_t> head;  // bytes produced
  alignas(64) std::atomic<uint64_t> tail;  // bytes consumed
};

struct rec_t {
  uint32_t size;  // of the record, header included (0: wrap to the start)
  uint32_t kind;  // 0: send, 1: immediate of a write
  uint32_t len;   // payload bytes (send) or bytes written (immediate)
  uint32_t imm_be;
};

struct seg_t {
  uint32_t magic;
  int32_t pid;
  std::atomic<uint32_t> next_gen;
  std::atomic<uint32_t> qp_used[kMaxQp];
  mr_entry_t mr[kMaxMr];
  ring_hdr_t ring[kMaxQp];
  // then kMaxQp rings of kRingBytes
};

size_t seg_bytes() { return sizeof(seg_t) + kMaxQp * kRingBytes; }

char* ring_data(seg_t* s, uint32_t slot)
{
  return reinterpret_cast<char*>(s + 1) + slot * kRingBytes;
}

std::string seg_name(int pid, uint32_t n)
{
  return std::string("/") + kPrefix + std::to_string(pid) + "-" +
         std::to_string(n);
}

// A process that no longer runs: none, or a zombie (killed, not yet reaped
// by its launcher).
bool gone(int pid)
{
  if (kill(pid, 0) != 0) return errno == ESRCH;
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return false;
  char state = 0;
  // "pid (comm) state ...": comm may hold spaces, so from the last ')'
  char line[512];
  if (std::fgets(line, sizeof(line), f))
    if (const char* p = std::strrchr(line, ')')) state = p[2];
  std::fclose(f);
  return state == 'Z' || state == 'X';
}

// Segments of fake devices whose process is gone (a rank that was killed).
void sweep_stale()
{
  DIR* d = opendir("/dev/shm");
  if (!d) return;
  const size_t plen = std::strlen(kPrefix);
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, kPrefix, plen) != 0) continue;
    const int pid = std::atoi(e->d_name + plen);
    if (pid > 0 && gone(pid))
      shm_unlink((std::string("/") + e->d_name).c_str());
  }
  closedir(d);
}

struct fake_srq_t {
  std::mutex m;
  struct buf_t {
    void* addr;
    uint32_t len;
    uint32_t lkey;
    uint64_t wr_id;
  };
  std::deque<buf_t> bufs;
  size_t cap;
};

struct fake_qp_t;

struct fake_cq_t {
  std::mutex m;
  std::deque<wc_t> done;
  std::vector<fake_qp_t*> qps;
};

struct fake_qp_t {
  uint32_t qpn;  // slot + 1
  fake_cq_t* cq;
  fake_srq_t* srq;
  std::mutex tx;
  enum class state_t { init, rtr, rts, error } state = state_t::init;
  seg_t* peer = nullptr;  // the target's segment
  uint32_t peer_slot = 0;
  int peer_pid = 0;
  uint32_t max_send_wr = 0;
};

class fake_verbs_t final : public verbs_t
{
 public:
  ~fake_verbs_t() override
  {
    for (auto& [key, s] : peers_)
      if (s != seg_) munmap(s, seg_bytes());
    if (seg_) {
      munmap(seg_, seg_bytes());
      shm_unlink(name_.c_str());
    }
    // a peer killed meanwhile left its segment: the survivors remove it
    sweep_stale();
  }

  bool open(const open_attr_t& attr, const std::string& mode, std::string* why)
  {
    if (mode == "down") {
      *why =
          "no RDMA device with an active port (fake port 1 is DOWN; "
          "LCI_IBV_FAKE=down)";
      return false;
    }
    if (mode != "1" && mode != "pin" && mode != "check") {
      *why = "LCI_IBV_FAKE='" + mode + "' (test only: 1, down, pin or check)";
      return false;
    }
    check_ = mode == "check";
    // A real registration pins its pages, and khugepaged leaves pinned
    // pages alone; the fake pins nothing, so in check mode collapsing small
    // pages into a huge one (the packet pool asks for huge pages) would
    // change the frames of a registration still valid and look stale.
    if (check_) prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
    // peers copy into this process's memory (process_vm_writev): allow it
    // where Yama restricts ptrace to ancestors
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    sweep_stale();
    static std::atomic<uint32_t> counter{0};
    index_ = counter.fetch_add(1);
    name_ = seg_name(getpid(), index_);
    int fd = shm_open(name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(seg_bytes())) != 0) {
      *why = "fake verbs: cannot create " + name_ + ": " + std::strerror(errno);
      if (fd >= 0) close(fd);
      shm_unlink(name_.c_str());
      return false;
    }
    void* p =
        mmap(nullptr, seg_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
      *why = "fake verbs: cannot map " + name_;
      shm_unlink(name_.c_str());
      return false;
    }
    seg_ = static_cast<seg_t*>(p);
    seg_->pid = getpid();
    seg_->next_gen.store(1);
    seg_->magic = kMagic;
    port_.device = "fake";
    port_.lid = 1;
    const uint32_t pid = static_cast<uint32_t>(getpid());
    std::memcpy(port_.gid, &pid, 4);
    std::memcpy(port_.gid + 4, &index_, 4);
    port_.gid_idx =
        attr.gid_idx >= 0 && !attr.force_gid_auto_select ? attr.gid_idx : 0;
    port_.mtu = 5;
    port_.max_inline = kMaxInline;
    port_.max_msg = 1ull << 30;
    port_.max_qp_wr = 16384;
    port_.max_srq_wr = 16384;
    port_.max_cqe = 1u << 20;
    port_.odp_explicit = true;
    port_.odp_implicit = true;
    port_.thread_domains = true;
    port_.pins_memory = mode == "pin";
    return true;
  }

  const char* name() const override { return "fake (test only)"; }
  const port_t& port() const override { return port_; }

  mr_t reg_mr(void* addr, size_t len, bool odp) override
  {
    mr_t out;
    if (!addr && !odp) {
      errno = EINVAL;
      return out;
    }
    for (uint32_t tries = 0; tries < kMaxMr; ++tries) {
      const uint32_t i = next_mr_++ % kMaxMr;
      uint32_t expect = 0;
      mr_entry_t& e = seg_->mr[i];
      // claim with a placeholder key, fill, then publish the real key
      if (!e.rkey.compare_exchange_strong(expect, 1u)) continue;
      e.addr = reinterpret_cast<uintptr_t>(addr);
      e.len = len;
      e.frame_first = e.frame_last = 0;
      if (check_ && !odp && len > 0) record_frames(e);
      const uint32_t gen = seg_->next_gen.fetch_add(1) & 0x7fff;
      const uint32_t key = ((gen + 1) << 16) | i;
      e.rkey.store(key, std::memory_order_release);
      out.handle = &e;
      out.lkey = out.rkey = key;
      return out;
    }
    errno = ENOMEM;
    return out;
  }

  void dereg_mr(const mr_t& mr) override
  {
    if (mr.handle)
      static_cast<mr_entry_t*>(mr.handle)->rkey.store(
          0, std::memory_order_release);
  }

  // the range must lie in the live registration, as the adapter checks
  int prefetch_mr(const mr_t& mr, void* addr, size_t len, int advice) override
  {
    const auto* e = static_cast<const mr_entry_t*>(mr.handle);
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    if (!e || advice < 0 || advice > 2 ||
        e->rkey.load(std::memory_order_acquire) != mr.rkey)
      return EINVAL;
    if (e->len != SIZE_MAX && (a < e->addr || len > e->len - (a - e->addr)))
      return EINVAL;
    return 0;
  }

  void* create_cq(int) override { return new fake_cq_t; }
  void destroy_cq(void* cq) override { delete static_cast<fake_cq_t*>(cq); }
  void* create_srq(int max_wr) override
  {
    auto* s = new fake_srq_t;
    s->cap = static_cast<size_t>(max_wr);
    return s;
  }
  void destroy_srq(void* s) override { delete static_cast<fake_srq_t*>(s); }
  void* alloc_td() override { return new int(0); }
  void dealloc_td(void* td) override { delete static_cast<int*>(td); }

  qp_t create_qp(void* cq, void* srq, void*, uint32_t max_send_wr,
                 uint32_t max_inline) override
  {
    qp_t out;
    if (max_inline > kMaxInline) {
      errno = EINVAL;
      return out;
    }
    for (uint32_t i = 0; i < kMaxQp; ++i) {
      uint32_t expect = 0;
      if (!seg_->qp_used[i].compare_exchange_strong(expect, 1u)) continue;
      seg_->ring[i].head.store(0);
      seg_->ring[i].tail.store(0);
      auto* q = new fake_qp_t;
      q->qpn = i + 1;
      q->cq = static_cast<fake_cq_t*>(cq);
      q->srq = static_cast<fake_srq_t*>(srq);
      q->max_send_wr = max_send_wr;
      {
        std::lock_guard<std::mutex> g(q->cq->m);
        q->cq->qps.push_back(q);
      }
      out.handle = q;
      out.qpn = q->qpn;
      return out;
    }
    errno = ENOMEM;  // out of fake QP slots
    return out;
  }

  void destroy_qp(const qp_t& qp) override
  {
    auto* q = static_cast<fake_qp_t*>(qp.handle);
    if (!q) return;
    {
      std::lock_guard<std::mutex> g(q->cq->m);
      auto& v = q->cq->qps;
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i] == q) {
          v.erase(v.begin() + static_cast<long>(i));
          break;
        }
    }
    seg_->qp_used[q->qpn - 1].store(0);
    delete q;
  }

  int to_rtr(const qp_t& qp, const qp_addr_t& r) override
  {
    auto* q = static_cast<fake_qp_t*>(qp.handle);
    std::lock_guard<std::mutex> g(q->tx);
    if (q->state != fake_qp_t::state_t::init) return EINVAL;
    int pid;
    uint32_t index;
    std::memcpy(&pid, r.gid, 4);
    std::memcpy(&index, r.gid + 4, 4);
    if (r.qpn == 0 || r.qpn > kMaxQp) return EINVAL;
    seg_t* s = map_peer(pid, index);
    if (!s) return errno ? errno : EINVAL;
    q->peer = s;
    q->peer_slot = r.qpn - 1;
    q->peer_pid = pid;
    q->state = fake_qp_t::state_t::rtr;
    return 0;
  }

  int to_rts(const qp_t& qp, uint32_t) override
  {
    auto* q = static_cast<fake_qp_t*>(qp.handle);
    std::lock_guard<std::mutex> g(q->tx);
    if (q->state != fake_qp_t::state_t::rtr) return EINVAL;
    q->state = fake_qp_t::state_t::rts;
    return 0;
  }

  int post_send(const qp_t& qp, const wr_t& w) override
  {
    auto* q = static_cast<fake_qp_t*>(qp.handle);
    std::lock_guard<std::mutex> g(q->tx);
    if (q->state == fake_qp_t::state_t::init ||
        q->state == fake_qp_t::state_t::rtr)
      return EINVAL;
    if (q->state == fake_qp_t::state_t::error)
      return complete(q, w, "Work Request Flushed Error");
    uint64_t total = 0;
    for (int i = 0; i < w.nsge; ++i) total += w.sge[i].len;
    if (w.inline_data && total > kMaxInline) return EINVAL;
    if (!w.inline_data)
      for (int i = 0; i < w.nsge; ++i)
        if (const char* err =
                local_error(w.sge[i].lkey, w.sge[i].addr, w.sge[i].len))
          return fail(q, w, err);
    switch (w.op) {
      case op_t::send: {
        if (total > kMaxSend) return fail(q, w, "local length error");
        char* dst = reserve(q, total);
        if (!dst) return ENOMEM;
        for (int i = 0; i < w.nsge; ++i) {
          std::memcpy(dst, w.sge[i].addr, w.sge[i].len);
          dst += w.sge[i].len;
        }
        publish(q, 0, static_cast<uint32_t>(total), 0);
        return complete(q, w, nullptr);
      }
      case op_t::write:
      case op_t::write_imm: {
        if (w.op == op_t::write_imm && !reserve(q, 0)) return ENOMEM;
        if (const char* err = remote_error(q, w.rkey, w.raddr, total))
          return fail(q, w, err);
        if (!transfer(q, w, total, true))
          return fail(q, w, "transport retry counter exceeded");
        if (w.op == op_t::write_imm)
          publish(q, 1, static_cast<uint32_t>(total), w.imm_be);
        return complete(q, w, nullptr);
      }
      case op_t::read: {
        if (const char* err = remote_error(q, w.rkey, w.raddr, total))
          return fail(q, w, err);
        if (!transfer(q, w, total, false))
          return fail(q, w, "transport retry counter exceeded");
        return complete(q, w, nullptr);
      }
    }
    return EINVAL;
  }

  int post_srq_recv(void* srq, void* buf, uint32_t len, uint32_t lkey,
                    uint64_t wr_id) override
  {
    auto* s = static_cast<fake_srq_t*>(srq);
    std::lock_guard<std::mutex> g(s->m);
    if (s->bufs.size() >= s->cap) return ENOMEM;
    s->bufs.push_back({buf, len, lkey, wr_id});
    return 0;
  }

  int poll_cq(void* cq, wc_t* out, int n) override
  {
    auto* c = static_cast<fake_cq_t*>(cq);
    std::lock_guard<std::mutex> g(c->m);
    for (fake_qp_t* q : c->qps) drain(c, q);
    int got = 0;
    while (got < n && !c->done.empty()) {
      out[got++] = c->done.front();
      c->done.pop_front();
    }
    return got;
  }

 private:
  seg_t* map_peer(int pid, uint32_t index)
  {
    const uint64_t key = (static_cast<uint64_t>(pid) << 32) | index;
    std::lock_guard<std::mutex> g(peers_m_);
    auto it = peers_.find(key);
    if (it != peers_.end()) return it->second;
    if (pid == getpid() && index == index_) return peers_[key] = seg_;
    int fd = shm_open(seg_name(pid, index).c_str(), O_RDWR, 0);
    if (fd < 0) return nullptr;
    void* p =
        mmap(nullptr, seg_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return nullptr;
    auto* s = static_cast<seg_t*>(p);
    if (s->magic != kMagic) {
      munmap(p, seg_bytes());
      errno = EPROTO;
      return nullptr;
    }
    return peers_[key] = s;
  }

  static bool covers(const mr_entry_t& e, uint32_t key, uint64_t addr,
                     uint64_t len)
  {
    if (e.rkey.load(std::memory_order_acquire) != key) return false;
    if (e.addr == 0 && e.len == SIZE_MAX) return true;  // implicit
    return addr >= e.addr && addr + len <= e.addr + e.len;
  }

  // Check mode: the pages the registration found, as real pinning keeps
  // them (write-faulted first, as registering does: a page never written
  // would be the shared zero page until its first write).
  void record_frames(mr_entry_t& e)
  {
    static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t lo = e.addr / page * page;
    const uint64_t hi = (e.addr + e.len + page - 1) / page * page;
    if (madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_WRITE) != 0)
      return;  // not writable memory, or an old kernel: not checked
    e.frame_first = frame_of(getpid(), e.addr);
    e.frame_last = frame_of(getpid(), e.addr + e.len - 1);
    if (!e.frame_first || !e.frame_last) e.frame_first = e.frame_last = 0;
  }

  // The registration still has the pages it was made with (always true
  // when nothing was recorded).
  static bool same_pages(int pid, const mr_entry_t& e)
  {
    if (!e.frame_first) return true;
    return frame_of(pid, e.addr) == e.frame_first &&
           frame_of(pid, e.addr + e.len - 1) == e.frame_last;
  }

  // 0, or why an access of `len` bytes at `addr` through the local key
  // `lkey` fails
  const char* local_error(uint32_t lkey, const void* addr, uint64_t len) const
  {
    if (len == 0) return nullptr;
    const mr_entry_t& e = seg_->mr[lkey & 0xffff];
    if (!covers(e, lkey, reinterpret_cast<uintptr_t>(addr), len))
      return "local protection error";
    if (!same_pages(seg_->pid, e)) return kStale;
    return nullptr;
  }

  static const char* remote_error(fake_qp_t* q, uint32_t rkey, uint64_t addr,
                                  uint64_t len)
  {
    if (len == 0) return nullptr;
    const mr_entry_t& e = q->peer->mr[rkey & 0xffff];
    if (!covers(e, rkey, addr, len)) return "remote access error";
    if (!same_pages(q->peer_pid, e)) return kStale;
    return nullptr;
  }

  // the data of a write (to the peer) or a read (from it)
  static bool transfer(fake_qp_t* q, const wr_t& w, uint64_t total, bool write)
  {
    if (total == 0) return true;
    iovec local[2];
    for (int i = 0; i < w.nsge; ++i)
      local[i] = {const_cast<void*>(w.sge[i].addr), w.sge[i].len};
    iovec remote{reinterpret_cast<void*>(w.raddr), total};
    uint64_t done = 0;
    while (done < total) {
      // the kernel may move less than asked: go on from there
      iovec l[2];
      int nl = 0;
      uint64_t skip = done;
      for (int i = 0; i < w.nsge; ++i) {
        if (skip >= local[i].iov_len) {
          skip -= local[i].iov_len;
          continue;
        }
        l[nl++] = {static_cast<char*>(local[i].iov_base) + skip,
                   local[i].iov_len - skip};
        skip = 0;
      }
      iovec r{static_cast<char*>(remote.iov_base) + done, total - done};
      const ssize_t n = write ? process_vm_writev(q->peer_pid, l, nl, &r, 1, 0)
                              : process_vm_readv(q->peer_pid, l, nl, &r, 1, 0);
      if (n <= 0) return false;
      done += static_cast<uint64_t>(n);
    }
    return true;
  }

  // Room for a record of `len` payload bytes in the peer's ring (a wrap
  // record first when it would not fit before the end); null when full.
  static char* reserve(fake_qp_t* q, uint64_t len)
  {
    ring_hdr_t& h = q->peer->ring[q->peer_slot];
    char* data = ring_data(q->peer, q->peer_slot);
    const uint64_t need = (sizeof(rec_t) + len + 15) & ~uint64_t(15);
    uint64_t head = h.head.load(std::memory_order_relaxed);
    const uint64_t tail = h.tail.load(std::memory_order_acquire);
    const uint64_t off = head % kRingBytes;
    uint64_t extra = 0;
    if (off + need > kRingBytes) extra = kRingBytes - off;
    if (head + extra + need - tail > kRingBytes) return nullptr;
    if (extra) {
      auto* wrap = reinterpret_cast<rec_t*>(data + off);
      wrap->size = 0;
      head += extra;
      h.head.store(head, std::memory_order_release);
    }
    return data + head % kRingBytes + sizeof(rec_t);
  }

  static void publish(fake_qp_t* q, uint32_t kind, uint32_t len,
                      uint32_t imm_be)
  {
    ring_hdr_t& h = q->peer->ring[q->peer_slot];
    char* data = ring_data(q->peer, q->peer_slot);
    const uint64_t head = h.head.load(std::memory_order_relaxed);
    auto* r = reinterpret_cast<rec_t*>(data + head % kRingBytes);
    const uint64_t payload = kind == 0 ? len : 0;
    r->size =
        static_cast<uint32_t>((sizeof(rec_t) + payload + 15) & ~uint64_t(15));
    r->kind = kind;
    r->len = len;
    r->imm_be = imm_be;
    h.head.store(head + r->size, std::memory_order_release);
  }

  // Incoming records of `q` while the SRQ has buffers.
  void drain(fake_cq_t* c, fake_qp_t* q)
  {
    ring_hdr_t& h = seg_->ring[q->qpn - 1];
    char* data = ring_data(seg_, q->qpn - 1);
    uint64_t tail = h.tail.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t head = h.head.load(std::memory_order_acquire);
      if (tail == head) break;
      auto* r = reinterpret_cast<rec_t*>(data + tail % kRingBytes);
      if (r->size == 0) {  // wrap
        tail += kRingBytes - tail % kRingBytes;
        h.tail.store(tail, std::memory_order_release);
        continue;
      }
      fake_srq_t::buf_t b;
      {
        std::lock_guard<std::mutex> g(q->srq->m);
        if (q->srq->bufs.empty()) break;  // waits, as RNR retry would
        b = q->srq->bufs.front();
        q->srq->bufs.pop_front();
      }
      wc_t wc{};
      wc.wr_id = b.wr_id;
      wc.qpn = q->qpn;
      wc.len = r->len;
      if (r->kind == 1) {
        wc.kind = wc_t::kind_t::recv_imm;
        wc.imm_be = r->imm_be;
      } else {
        wc.kind = wc_t::kind_t::recv;
        if (r->len > b.len)
          wc.error = "local length error";
        else if (const char* err = local_error(b.lkey, b.addr, r->len))
          wc.error = err;
        else
          std::memcpy(b.addr, r + 1, r->len);
      }
      c->done.push_back(wc);
      tail += r->size;
      h.tail.store(tail, std::memory_order_release);
    }
  }

  static wc_t::kind_t kind_of(op_t op)
  {
    switch (op) {
      case op_t::send:
        return wc_t::kind_t::send;
      case op_t::read:
        return wc_t::kind_t::read;
      default:
        return wc_t::kind_t::write;
    }
  }

  // A completion for a post (an error one always, as on hardware).
  int complete(fake_qp_t* q, const wr_t& w, const char* error)
  {
    if (!w.signaled && !error) return 0;
    wc_t wc{};
    wc.kind = kind_of(w.op);
    wc.wr_id = w.wr_id;
    wc.qpn = q->qpn;
    wc.error = error;
    std::lock_guard<std::mutex> g(q->cq->m);
    q->cq->done.push_back(wc);
    return 0;
  }

  int fail(fake_qp_t* q, const wr_t& w, const char* error)
  {
    q->state = fake_qp_t::state_t::error;
    return complete(q, w, error);
  }

  port_t port_;
  bool check_ = false;  // LCI_IBV_FAKE=check: stale registrations fail
  seg_t* seg_ = nullptr;
  std::string name_;
  uint32_t index_ = 0;
  std::atomic<uint32_t> next_mr_{0};
  std::mutex peers_m_;
  std::map<uint64_t, seg_t*> peers_;
};

}  // namespace

bool fake_frames_visible()
{
  static char probe[1];
  probe[0] = 1;
  return frame_of(getpid(), reinterpret_cast<uintptr_t>(probe)) != 0;
}

std::unique_ptr<verbs_t> open_fake_verbs(const open_attr_t& attr,
                                         const std::string& mode,
                                         std::string* why)
{
  auto v = std::make_unique<fake_verbs_t>();
  if (!v->open(attr, mode, why)) return nullptr;
  return v;
}

}  // namespace lci::net::ibv
