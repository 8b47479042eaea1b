#include "net/shm/keys.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "net/shm/leftovers.hpp"
#include "util/error.hpp"

namespace lci::net::shm
{
namespace
{

constexpr int kBits = 14;
constexpr uint64_t kSlots = uint64_t(1) << kBits;
constexpr uint64_t kMask = kSlots - 1;
// listed at most (linear probing stays short below this load)
constexpr uint64_t kMaxLive = kSlots / 4 * 3;
// a reader's tries of a slot its owner is changing: the owner may have died
// in the middle, and a dead owner's table must not hang its peers
constexpr int kMaxSpins = 1 << 20;

enum : uint64_t { kEmpty = 0, kLive = 1, kTomb = 2 };

struct header_t {
  uint64_t magic;
  uint64_t nslots;
  uint64_t unlisted;  // live registrations not in the table
  uint64_t owner_pid;
  unsigned char pad_[24];
  uint64_t owner_pidns;  // the owner's pid namespace (leftovers.hpp)
};
static_assert(offsetof(header_t, owner_pid) == owner_words_t::kPidOffset &&
                  offsetof(header_t, owner_pidns) ==
                      owner_words_t::kPidnsOffset,
              "the fields reclaim_leftovers reads");

struct slot_t {
  uint64_t word;  // bit 0: being written; bits 1-2: state; above: version
  uint64_t key;
  uint64_t base;
  uint64_t size;
};

constexpr size_t kBytes = sizeof(header_t) + kSlots * sizeof(slot_t);

slot_t* slots(const char* table)
{
  return reinterpret_cast<slot_t*>(const_cast<char*>(table) + sizeof(header_t));
}

uint64_t home(uint64_t key)
{
  return (key * 0x9E3779B97F4A7C15ull) >> (64 - kBits);
}

uint64_t state_of(uint64_t word) { return (word >> 1) & 3; }

// the owner's write of one slot, as a seqlock
void write_slot(slot_t* s, uint64_t state, uint64_t key, uint64_t base,
                uint64_t size)
{
  const uint64_t w = s->word;
  __atomic_store_n(&s->word, w | 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&s->key, key, __ATOMIC_RELAXED);
  __atomic_store_n(&s->base, base, __ATOMIC_RELAXED);
  __atomic_store_n(&s->size, size, __ATOMIC_RELAXED);
  __atomic_store_n(&s->word, ((w >> 3) + 1) << 3 | state << 1,
                   __ATOMIC_RELEASE);
}

}  // namespace

char* create_segment(const std::string& name, size_t bytes, const char* call,
                     const char* what)
{
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0)
    util::throw_fatal(call, ": shm_open(", name,
                      ") failed: ", std::strerror(errno));
  // owner read-write only, whatever the umask took from 0600
  if (fchmod(fd, 0600) != 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int e = errno;
    ::close(fd);
    shm_unlink(name.c_str());
    util::throw_fatal(call, ": cannot set up the ", bytes, "-byte ", what, " ",
                      name, ": ", std::strerror(e));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    int e = errno;
    shm_unlink(name.c_str());
    util::throw_fatal(call, ": mmap of ", name, " failed: ", std::strerror(e));
  }
  return static_cast<char*>(p);
}

key_table_t::key_table_t(int rank_me, int rank_n, uint64_t nonce)
    : rank_me_(rank_me), rank_n_(rank_n)
{
  static std::atomic<uint64_t> counter{0};
  name_ = "/lci-shm-" + std::to_string(::getpid()) + "-" +
          std::to_string(nonce) + "-keys" + std::to_string(counter++);
  own_ = create_segment(name_, kBytes, "alloc_runtime", "registration table");
  bytes_ = kBytes;
  auto* h = reinterpret_cast<header_t*>(own_);
  h->nslots = kSlots;
  h->owner_pid = static_cast<uint64_t>(::getpid());
  h->owner_pidns = pid_namespace();
  __atomic_store_n(&h->magic, kMagic, __ATOMIC_RELEASE);
  peers_.assign(static_cast<size_t>(rank_n), nullptr);
  if (rank_n == 1) try_unlink();
}

key_table_t::~key_table_t()
{
  for (int r = 0; r < rank_n_; ++r)
    if (peers_[r] && r != rank_me_)
      munmap(const_cast<char*>(peers_[r]), bytes_);
  if (own_) munmap(own_, bytes_);
  if (!unlinked_) shm_unlink(name_.c_str());
}

void key_table_t::add(uint64_t key, uint64_t base, uint64_t size)
{
  std::lock_guard<std::mutex> g(mu_);
  auto* h = reinterpret_cast<header_t*>(own_);
  if (live_ >= kMaxLive) {
    unlisted_.insert(key);
    __atomic_fetch_add(&h->unlisted, 1, __ATOMIC_RELEASE);
    return;
  }
  slot_t* s = slots(own_);
  for (uint64_t i = home(key);; i = (i + 1) & kMask) {
    if (state_of(s[i].word) != kLive) {
      write_slot(&s[i], kLive, key, base, size);
      ++live_;
      return;
    }
  }
}

void key_table_t::remove(uint64_t key)
{
  std::lock_guard<std::mutex> g(mu_);
  slot_t* s = slots(own_);
  for (uint64_t i = home(key), n = 0; n < kSlots; ++n, i = (i + 1) & kMask) {
    const uint64_t st = state_of(s[i].word);
    if (st == kEmpty) break;
    if (st != kLive || s[i].key != key) continue;
    write_slot(&s[i], kTomb, 0, 0, 0);
    --live_;
    // the chain ends after this slot: its tombstones are no longer needed
    if (state_of(s[(i + 1) & kMask].word) == kEmpty)
      for (uint64_t j = i; state_of(s[j].word) == kTomb; j = (j - 1) & kMask)
        write_slot(&s[j], kEmpty, 0, 0, 0);
    return;
  }
  if (unlisted_.erase(key))
    __atomic_fetch_sub(&reinterpret_cast<header_t*>(own_)->unlisted, 1,
                       __ATOMIC_RELEASE);
}

void key_table_t::map_peer(int r, const std::string& name)
{
  std::lock_guard<std::mutex> g(mu_);
  if (r == rank_me_ || peers_[r]) return;
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0)
    util::throw_fatal("alloc_device: cannot open rank ", r,
                      "'s registration table ", name, ": ",
                      std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != kBytes) {
    ::close(fd);
    util::throw_fatal("alloc_device: rank ", r, "'s registration table ", name,
                      " has the wrong size (another LCI version?)");
  }
  void* p = mmap(nullptr, kBytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED)
    util::throw_fatal("alloc_device: cannot map rank ", r,
                      "'s registration table ", name, ": ",
                      std::strerror(errno));
  auto* h = static_cast<const header_t*>(p);
  if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != kMagic ||
      h->nslots != kSlots) {
    munmap(p, kBytes);
    util::throw_fatal("alloc_device: rank ", r, "'s registration table ", name,
                      " is not one of this LCI version");
  }
  __atomic_store_n(&peers_[r], static_cast<const char*>(p), __ATOMIC_RELEASE);
}

const char* key_table_t::check(int r, uint64_t key, uint64_t addr,
                               uint64_t size) const
{
  const char* table =
      r == rank_me_ ? own_ : __atomic_load_n(&peers_[r], __ATOMIC_ACQUIRE);
  if (!table) return "the target's registration table is not mapped here";
  const slot_t* s = slots(table);
  for (uint64_t i = home(key), n = 0; n < kSlots; ++n, i = (i + 1) & kMask) {
    uint64_t w, k, b, len;
    for (int spins = 0;; ++spins) {
      if (spins == kMaxSpins)
        return "the target's registration table stays locked (its owner "
               "died while changing it?)";
      w = __atomic_load_n(&s[i].word, __ATOMIC_ACQUIRE);
      if (w & 1) continue;
      k = __atomic_load_n(&s[i].key, __ATOMIC_RELAXED);
      b = __atomic_load_n(&s[i].base, __ATOMIC_RELAXED);
      len = __atomic_load_n(&s[i].size, __ATOMIC_RELAXED);
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      if (__atomic_load_n(&s[i].word, __ATOMIC_RELAXED) == w) break;
    }
    const uint64_t st = state_of(w);
    if (st == kEmpty) break;
    if (st != kLive || k != key) continue;
    if (addr < b || size > len || addr - b > len - size)
      return "the target refused it: its bytes are outside the region "
             "registered there under its key";
    return nullptr;
  }
  const auto* h = reinterpret_cast<const header_t*>(table);
  if (__atomic_load_n(&h->unlisted, __ATOMIC_ACQUIRE) != 0) return nullptr;
  return "the target refused it: its key names no region registered there "
         "(deregistered, or not a key of that rank)";
}

void key_table_t::try_unlink()
{
  std::lock_guard<std::mutex> g(mu_);
  if (unlinked_) return;
  shm_unlink(name_.c_str());
  unlinked_ = true;
}

}  // namespace lci::net::shm
