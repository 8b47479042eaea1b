#include "net/shm/device.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/shm/cma.hpp"
#include "net/shm/leftovers.hpp"

namespace lci::net::shm
{

shm_device_t::shm_device_t(const config_t& cfg)
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
  bell0_ = bell_word(0);
  hot_.assign(lay_.nwords, 0);
  idle_.assign(static_cast<size_t>(cfg.rank_n), 0);
  lent_.reset(new int[static_cast<size_t>(cfg.rank_n)]);
}

shm_device_t::~shm_device_t()
{
  for (int r = 0; r < static_cast<int>(peers_.size()); ++r)
    if (r != cfg_.rank_me && peers_[r].base)
      munmap(peers_[r].base, peers_[r].size);
  if (seg_) munmap(seg_, lay_.total);
  if (!unlinked_) shm_unlink(name_.c_str());
}

std::string shm_device_t::get_address()
{
  return name_ + "\n" + std::to_string(::getpid()) + "\n" + cfg_.node + "\n" +
         cfg_.keys->name();
}

void shm_device_t::connect(const std::vector<std::string>& addrs)
{
  const int n = cfg_.rank_n;
  if (static_cast<int>(addrs.size()) != n)
    util::throw_fatal("alloc_device: ", addrs.size(), " addresses for ", n,
                      " ranks");
  const std::string& me = cfg_.node;
  peers_.resize(static_cast<size_t>(n));
  tx_ = std::unique_ptr<tx_ring_t[]>(new tx_ring_t[static_cast<size_t>(n)]);
  // a data piece of a fallback transfer: a quarter ring, at most 64 KiB
  jobs_.init(tx_.get(), std::min<size_t>(cfg_.ring_bytes / 4, 65536) - kSlot);
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
    if (r != cfg_.rank_me) __atomic_fetch_add(&h->nmapped, 1, __ATOMIC_RELEASE);
  }
  max_payload_ = tx_[0].prod.max_payload();
  try_unlink();
}

void shm_device_t::connected()
{
  if (!unlinked_) try_unlink();
}

void shm_device_t::map_peer(int r, const std::string& name, peer_t* p)
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
    util::throw_fatal("alloc_device: cannot map rank ", r, "'s segment ", name,
                      ": ", std::strerror(errno));
  p->base = m;
  p->size = lay_.total;
}

void shm_device_t::open_failed(int r, const std::string& name, pid_t pid,
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

void shm_device_t::try_unlink()
{
  auto* h = reinterpret_cast<seg_header_t*>(seg_);
  if (__atomic_load_n(&h->nmapped, __ATOMIC_ACQUIRE) ==
      static_cast<uint64_t>(cfg_.rank_n - 1)) {
    shm_unlink(name_.c_str());
    unlinked_ = true;
    quiet_ok_ = lay_.nwords == 1;
    cfg_.keys->try_unlink();
  }
}

}  // namespace lci::net::shm
