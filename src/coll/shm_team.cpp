// The shared-memory team of the node-local collectives; see shm_team.hpp.
//
// Segment (created by rank 0, mapped by every rank, unlinked by rank 0 as
// soon as every rank mapped it, so a finished or killed job leaves nothing
// in /dev/shm; the name starts "lci-shm-<pid>-", which lcrun removes when
// it kills rank 0 in between), in cache lines:
//
//   header   magic, rank count, slot size
//   control  per rank kRoundLines lines, round e in line e % kRoundLines,
//            with the last round it published there (`seq`), what it
//            called in it (kind, root, bytes, item size), which every rank
//            compares with its own, and the round's data when each rank's
//            part is at most kInlineBytes (then a reader's one line
//            transfer brings flag, description and data together); and
//            one line that says whether its team stopped (read while
//            waiting, written once at most, so it stays in every reader's
//            cache)
//   slots    per rank two data slots of slot_bytes (rounds alternate;
//            single-copy rounds use none: the control line carries the
//            address of the owner's buffer, which readers read by
//            cross-memory attach)
//   rings    per rank kRingBuffers ring buffers of slot_bytes /
//            kRingBuffers, round e in buffer e % kRingBuffers, for rounds
//            whose parts fit
//
// Round numbers only grow: a rank that is a round ahead never confuses a
// slower one, and the flags need no reset.
#include "coll/shm_team.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <exception>
#include <sstream>
#include <utility>

#include "bootstrap/bootstrap.hpp"
#include "coll/coll_graph.hpp"
#include "util/config.hpp"
#include "util/copy.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace lci::coll
{
namespace
{

constexpr uint64_t kMagic = 0x4c43492d636f6c32ull;  // "LCI-col2"
// the most ranks of a team: every rank reads every rank's control line in
// every round (flat), which stops paying somewhere above this
constexpr int kMaxRanks = 64;
// The most input bytes per rank an allgather or alltoall runs here (all
// blocks together for alltoall): above, the point-to-point algorithms move
// each block with one copy (cross-memory attach on the native backend),
// where the slots take two; with the single copy (kCmaBytes) the team
// takes them at any size. Broadcast and the reductions run here at any
// size (chunks through the slots): the copy into the segment is paid once
// for every reader, and a reduction reads its operands there directly.
constexpr size_t kMaxGatherBytes = size_t(256) << 10;
// From this many bytes a reduce or allreduce at 3 ranks and more splits the
// reduction into per-rank shares: every rank reduces 1/n of the chunk and
// copies the others' shares out, instead of every rank (allreduce) or the
// root (reduce) reading all n inputs in full. The share costs a second
// wait for every rank per chunk, which small buffers do not win back, and
// which costs whole time slices when the node has more ranks than cores
// (then the split is off: the work is not done in parallel anyway).
constexpr size_t kSplitBytes = size_t(16) << 10;
// From this many bytes per reader and peer (broadcast, reduce: the
// buffer; allgather: each rank's part; alltoall: a block) broadcast,
// allgather, alltoall and reduce copy once (see use_cma), reading the owner's
// buffer by cross-memory attach (process_vm_readv), instead of twice through a
// slot: the system call and the pinning of the pages cost about as much as a
// copy of a few kilobytes, and a round more (the owner waits until its readers
// are done) costs a cache-line round trip.
constexpr size_t kCmaBytes = size_t(16) << 10;
// A single-copy reduce's root reads and reduces the others' inputs in
// pieces of this many bytes, which stay in its cache in between.
constexpr size_t kCmaPiece = size_t(256) << 10;
// The most bytes a rank writes in a round that travel in its control line
// instead of a slot: 8-byte reductions, broadcasts and allgathers, and
// alltoalls of 8 bytes a block up to 4 ranks.
constexpr size_t kInlineBytes = 32;
// Control lines per rank for the rounds (round e uses line e % kRoundLines)
// and all of them with the stop line. A round whose data is inline reuses a
// line last written kRoundLines rounds before, so a rank that needs nobody
// (a broadcast's root, a reduce's other ranks) runs up to kRoundLines - 1
// rounds ahead of the slowest reader instead of one: a stream of small
// broadcasts streams into the ring, as MPI's eager slots do, and the reader
// finds each round's line already written (prefetched kReadAhead rounds
// ahead, so its line transfers overlap instead of following each other).
// When such a rank does have to check the others (see advance), it waits
// until they are within kRoundLines / 2 rounds, not only kRoundLines - 1:
// its next check is then at least kRoundLines / 2 - 1 rounds away, so it
// reads their lines that rarely instead of once per round, and a reader's
// line is seldom taken from it between two of its own writes. That wait
// blocks only where a ring of kRoundLines / 2 lines would block too.
// With more ranks than cores the ranks take turns on a core, and each turn
// of a rank that needs nobody lasts until it is that far ahead: a long ring
// makes the turns (a context switch each) rare per round.
constexpr uint64_t kRoundLines = 64;
// A round whose parts exceed a control line but fit a ring buffer
// (1/kRingBuffers of a slot) travels through a ring of kRingBuffers such
// buffers per rank, round e using buffer e % kRingBuffers, under the
// control lines' rule: it reuses a buffer written kRingBuffers rounds
// before, so a rank that needs nobody streams medium collectives (a
// broadcast of a few KiB) up to kRingBuffers - 1 rounds ahead too, instead
// of waiting each round for the readers of the round before, which puts a
// line's round trip on every call. The ring is an area of one slot's size
// per rank, apart from the slots, so the slots' rounds and the ring's never
// share bytes. Fewer buffers than lines keep each buffer large (64 KiB with
// 1 MiB slots).
constexpr uint64_t kRingBuffers = 16;
constexpr uint64_t kReadAhead = 4;
// A rank that wrote its ring buffer for round e asks for its buffer of
// round e + 1 in exclusive state (prefetchw) right after publishing e, so
// that taking those lines back from the ranks that read them sixteen
// rounds before overlaps its wait for the others instead of stalling the
// next round's copy in. Only in rounds of at most this many bytes: the
// prefetches of a larger buffer would still hold the line-fill buffers
// when the copy out of the others' buffers starts.
constexpr size_t kPrefetchWriteBytes = size_t(16) << 10;
constexpr size_t kLinesPerRank = kRoundLines + 1;
constexpr int32_t kStoppedFatal = 1;
constexpr int32_t kStoppedPeer = 2;

// item_size fits: the team takes no item larger than a slot. failed: a
// hierarchical stage that publishes its round without data because an
// earlier stage failed: the failed rank (-1 otherwise).
struct desc_t {
  uint32_t kind;
  int32_t root;
  uint64_t bytes;
  uint32_t item_size;
  int32_t failed;
  bool operator==(const desc_t& o) const
  {
    return kind == o.kind && root == o.root && bytes == o.bytes &&
           item_size == o.item_size;
  }
};

struct header_t {
  uint64_t magic;
  uint64_t nranks;
  uint64_t slot_bytes;
};

// The per-rank slot: 1 MiB up to 4 ranks, then smaller so that the slots
// stay within 8 MiB, at least 4 KiB. Large slots mean few rounds (each a
// wait for every rank) for large collectives; pages are touched only as far
// as collectives use them.
size_t slot_bytes_for(int n)
{
  size_t s = n <= 4 ? size_t(1) << 20 : (size_t(8) << 20) / (2 * n);
  return std::max<size_t>(4096, s / 64 * 64);
}

desc_t describe(const shm_request_t& r)
{
  desc_t d{static_cast<uint32_t>(r.kind), r.root, 0,
           static_cast<uint32_t>(r.item_size), -1};
  switch (r.kind) {
    case shm_kind_t::barrier:
      break;
    case shm_kind_t::broadcast:
    case shm_kind_t::allgather:
    case shm_kind_t::alltoall:
      d.bytes = r.size;
      break;
    case shm_kind_t::reduce:
    case shm_kind_t::allreduce:
    case shm_kind_t::reduce_scatter:
      d.bytes = r.count * r.item_size;
      break;
  }
  if (r.kind != shm_kind_t::broadcast && r.kind != shm_kind_t::reduce)
    d.root = 0;
  return d;
}

// Asks for a cache line in exclusive state ahead of a store to it: the
// line a rank publishes its next round in was read by the others since it
// last wrote it, and a locked instruction after the store would otherwise
// wait for that transfer.
inline void prefetch_for_write(const void* p)
{
#if defined(__x86_64__)
  // (a no-op encoding on x86-64 processors without the instruction)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#elif defined(__GNUC__)
  __builtin_prefetch(p, 1);
#else
  (void)p;
#endif
}

uint64_t name_counter()
{
  static std::atomic<uint64_t> n{0};
  return n.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

const char* kind_name(uint64_t kind)
{
  static const char* const names[] = {
      "collective", "barrier",        "broadcast", "reduce",
      "allreduce",  "reduce_scatter", "allgather", "alltoall"};
  return kind < 8 ? names[kind] : "collective";
}

// A rank's line of one round parity (see the layout above).
struct alignas(64) shm_team_t::line_t {
  std::atomic<uint64_t> seq;
  desc_t desc;
  char data[kInlineBytes];
};

// `stopped`: this rank's team stopped (ranks disagreed, a peer failed):
// 0 while it works, kStoppedFatal, or kStoppedPeer + the failed rank. A
// rank that waits for it in a round it will never publish reads why there.
struct alignas(64) shm_team_t::stop_t {
  std::atomic<int32_t> stopped;
};

namespace
{
// the first slot's offset in a segment of n ranks (page-aligned)
size_t slots_offset(size_t n)
{
  return (64 + 64 * kLinesPerRank * n + 4095) / 4096 * 4096;
}
}  // namespace

std::unique_ptr<shm_team_t> shm_team_t::open(
    bootstrap::backend_t& boot, int rank_me, int rank_n,
    const std::vector<std::string>& nodes)
{
  if (rank_n < 2 || nodes.size() != static_cast<size_t>(rank_n)) return nullptr;
  // nodes numbered in the order of their lowest rank, the leader; every
  // rank computes the same from the same ids
  std::vector<int> node_of(static_cast<size_t>(rank_n));
  std::vector<int> leaders;
  std::vector<int> sizes;
  for (int r = 0; r < rank_n; ++r) {
    int k = 0;
    while (k < static_cast<int>(leaders.size()) &&
           nodes[static_cast<size_t>(leaders[static_cast<size_t>(k)])] !=
               nodes[static_cast<size_t>(r)])
      ++k;
    if (k == static_cast<int>(leaders.size())) {
      leaders.push_back(r);
      sizes.push_back(0);
    }
    node_of[static_cast<size_t>(r)] = k;
    ++sizes[static_cast<size_t>(k)];
  }
  const int biggest = *std::max_element(sizes.begin(), sizes.end());
  if (biggest > kMaxRanks) return nullptr;
  std::vector<int> members;
  for (int r = 0; r < rank_n; ++r)
    if (node_of[static_cast<size_t>(r)] ==
        node_of[static_cast<size_t>(rank_me)])
      members.push_back(r);
  const int local_n = static_cast<int>(members.size());
  const int local_me = static_cast<int>(
      std::find(members.begin(), members.end(), rank_me) - members.begin());
  // one slot size and split point for every node (rank 0's), so that
  // whether the team takes a collective is the same answer everywhere.
  // LCI_COLL_SHM_SLOT (bytes): smaller slots make tests run the
  // several-round pipeline with small buffers
  size_t slot = slot_bytes_for(biggest);
  if (const char* v = util::env_get("LCI_COLL_SHM_SLOT")) {
    uint64_t x = util::parse_uint("LCI_COLL_SHM_SLOT", v);
    if (x < 4096 || x > (uint64_t(64) << 20))
      util::throw_fatal("environment LCI_COLL_SHM_SLOT=", v,
                        ": not between 4096 and 67108864 bytes");
    slot = static_cast<size_t>(x) / 64 * 64;
  }
  // LCI_COLL_SHM_SPLIT (bytes): where reductions start to split into
  // shares (tests and measurements move it)
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t split = cores > 0 && local_n > cores ? SIZE_MAX : kSplitBytes;
  if (const char* v = util::env_get("LCI_COLL_SHM_SPLIT"))
    split = static_cast<size_t>(util::parse_uint("LCI_COLL_SHM_SPLIT", v));
  // each node's leader creates its node's segment (nodes of one rank have
  // none) and tells the others its name ("" when it could not)
  // LCI_COLL_SHM_CMA (bytes, rank 0's value for all): the copy per reader
  // and peer from which broadcast, allgather and alltoall read the
  // owner's buffer by cross-memory attach; a value above any buffer turns
  // the single copy off
  size_t cma_bytes = kCmaBytes;
  if (const char* v = util::env_get("LCI_COLL_SHM_CMA"))
    cma_bytes = static_cast<size_t>(util::parse_uint("LCI_COLL_SHM_CMA", v));
  // 32-bit sizes saturate: UINT32_MAX reads back as SIZE_MAX (off)
  auto narrow = [](size_t x) {
    return static_cast<uint32_t>(std::min<size_t>(x, UINT32_MAX));
  };
  auto widen = [](uint32_t x) {
    return x == UINT32_MAX ? SIZE_MAX : static_cast<size_t>(x);
  };
  // `probe`: the address of `pid` in this process, which the others read by
  // cross-memory attach before the second allgather (this frame lives
  // until then) to learn whether the kernel lets them
  struct record_t {
    char name[40];
    uint32_t slot;
    uint32_t split;
    int32_t pid;
    uint32_t cma;
    uint64_t probe;
  } rec = {};
  static_assert(sizeof(record_t) == 64, "one bootstrap slot");
  rec.slot = narrow(slot);
  rec.split = narrow(split);
  rec.pid = static_cast<int32_t>(getpid());
  rec.cma = narrow(cma_bytes);
  rec.probe = reinterpret_cast<uintptr_t>(&rec.pid);
  char* name = rec.name;
  int fd = -1;
  auto total_for = [local_n](size_t slot_bytes) {
    return slots_offset(static_cast<size_t>(local_n)) +
           3 * slot_bytes * static_cast<size_t>(local_n);
  };
  const bool creator = local_me == 0 && local_n > 1;
  if (creator) {
    uint64_t nonce = static_cast<uint64_t>(
        std::chrono::steady_clock::now().time_since_epoch().count());
    std::snprintf(name, sizeof(rec.name), "/lci-shm-%ld-coll%llx-%llu",
                  static_cast<long>(getpid()),
                  static_cast<unsigned long long>(nonce & 0xffffffffu),
                  static_cast<unsigned long long>(name_counter()));
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    // the pages are reserved now: a full /dev/shm means no team, never a
    // SIGBUS in the middle of a collective
    if (fd >= 0 &&
        posix_fallocate(fd, 0, static_cast<off_t>(total_for(slot))) != 0) {
      close(fd);
      shm_unlink(name);
      fd = -1;
    }
    if (fd < 0) name[0] = '\0';
  }
  std::vector<record_t> recs(static_cast<size_t>(rank_n));
  try {
    boot.allgather(&rec, recs.data(), sizeof(record_t));
  } catch (...) {
    if (fd >= 0) {
      close(fd);
      shm_unlink(name);
    }
    throw;
  }
  // a leader whose environment gave another slot size sized its segment
  // for that one: no team
  const bool same_slot = recs[0].slot == slot;
  slot = static_cast<size_t>(recs[0].slot);
  cma_bytes = widen(recs[0].cma);
  // the split concerns a node's ranks only: its leader's choice
  split = widen(recs[static_cast<size_t>(members[0])].split);
  // whether the kernel lets this rank read each other rank of its node
  // (ptrace access: same user, Yama's scope, containers)
  bool cma_ok = cma_bytes != SIZE_MAX;
  for (size_t m = 0; cma_ok && m < members.size(); ++m) {
    const record_t& o = recs[static_cast<size_t>(members[m])];
    if (members[m] == rank_me) continue;
    int32_t v = 0;
    iovec li{&v, sizeof(v)};
    iovec ri{reinterpret_cast<void*>(static_cast<uintptr_t>(o.probe)),
             sizeof(v)};
    cma_ok = process_vm_readv(static_cast<pid_t>(o.pid), &li, 1, &ri, 1, 0) ==
                 static_cast<ssize_t>(sizeof(v)) &&
             v == o.pid;
  }
  std::memcpy(rec.name, recs[static_cast<size_t>(members[0])].name,
              sizeof(rec.name));
  rec.name[sizeof(rec.name) - 1] = '\0';
  const size_t total = total_for(slot);
  void* base = MAP_FAILED;
  if (local_n > 1 && name[0] != '\0') {
    if (!creator) fd = shm_open(name, O_RDWR, 0);
    if (fd >= 0) {
      base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      close(fd);
    }
  }
  // the team exists only if every rank of every node of two or more
  // mapped its segment
  // bit 0: mapped (or alone on its node), bit 1: may read its peers, bit
  // 2: broadcast and reduce keep the slots (its node has more ranks than
  // cores online; the leader's answer counts for its node, as for the
  // split)
  char ok = (base != MAP_FAILED && (same_slot || !creator)) || local_n == 1;
  // (LCI_COLL_SHM_CMA_ROOTED=0 or 1 decides it whatever the cores: tests)
  bool rooted = !(cores > 0 && local_n > cores);
  if (const char* v = util::env_get("LCI_COLL_SHM_CMA_ROOTED"))
    rooted = util::parse_uint("LCI_COLL_SHM_CMA_ROOTED", v) != 0;
  // bit 3: a reduce through the slots pairs its ranks (shm_op_t::child_),
  // by default where the node has more ranks than cores (the leader's
  // answer; LCI_COLL_SHM_PAIRS=0 or 1 decides it whatever the cores)
  bool pairs = cores > 0 && local_n > cores;
  if (const char* v = util::env_get("LCI_COLL_SHM_PAIRS"))
    pairs = util::parse_uint("LCI_COLL_SHM_PAIRS", v) != 0;
  ok = static_cast<char>(ok | (cma_ok ? 2 : 0) | (rooted ? 0 : 4) |
                         (pairs ? 8 : 0));
  std::vector<char> oks(static_cast<size_t>(rank_n));
  try {
    boot.allgather(&ok, oks.data(), 1);
  } catch (...) {
    if (creator && name[0] != '\0') shm_unlink(name);
    if (base != MAP_FAILED) munmap(base, total);
    throw;
  }
  if (creator && name[0] != '\0') shm_unlink(name);
  bool all = std::all_of(oks.begin(), oks.end(), [](char c) { return c & 1; });
  const bool cma_all =
      std::all_of(oks.begin(), oks.end(), [](char c) { return c & 2; });
  if (!all) {
    if (base != MAP_FAILED) munmap(base, total);
    return nullptr;
  }
  if (base == MAP_FAILED) base = nullptr;
  if (creator)
    *static_cast<header_t*>(base) =
        header_t{kMagic, static_cast<uint64_t>(local_n), slot};
  LCI_LOG(info, "collectives: ",
          leaders.size() > 1 ? "hierarchical team over " : "node-local team, ",
          leaders.size(), " node(s); this node has ", local_n,
          " rank(s), leader ", members[0], ", ", base ? "a" : "no", " segment");
  std::unique_ptr<shm_team_t> team(
      new shm_team_t(local_me, local_n, base, base ? total : 0, slot, split));
  team->members_ = std::move(members);
  team->node_of_ = std::move(node_of);
  team->leaders_ = std::move(leaders);
  team->oversubscribed_ = cores > 0 && local_n > cores;
  team->cma_ = cma_all && base;
  team->cma_bytes_ = cma_bytes;
  team->cma_rooted_ = !(oks[static_cast<size_t>(team->members_[0])] & 4);
  team->pairs_ = (oks[static_cast<size_t>(team->members_[0])] & 8) != 0;
  for (int m : team->members_)
    team->pids_.push_back(recs[static_cast<size_t>(m)].pid);
  return team;
}

std::unique_ptr<team_base_t> open_node_team(
    bootstrap::backend_t& boot, int rank_me, int rank_n,
    const std::vector<std::string>& nodes, bool (*failed)(void*, int),
    void* ctx)
{
  std::unique_ptr<shm_team_t> team =
      shm_team_t::open(boot, rank_me, rank_n, nodes);
  if (team) team->set_failure_check(failed, ctx);
  return team;
}

shm_team_t::shm_team_t(int rank_me, int rank_n, void* base, size_t bytes,
                       size_t slot_bytes, size_t split_bytes)
    : rank_me_(rank_me),
      rank_n_(rank_n),
      base_(base),
      bytes_(bytes),
      slot_bytes_(slot_bytes),
      ring_bytes_(slot_bytes / kRingBuffers / 64 * 64),
      split_bytes_(split_bytes)
{
  static_assert(sizeof(line_t) == 64 && sizeof(stop_t) == 64,
                "one cache line each");
}

shm_team_t::~shm_team_t()
{
  // nonblocking collectives never completed (their runtime is being freed)
  if (current_) current_->abandon();
  for (shm_op_t* op : queue_) op->abandon();
  if (base_) munmap(base_, bytes_);
}

uint64_t shm_team_t::round_lines() { return kRoundLines; }

shm_team_t::line_t* shm_team_t::line(int r, uint64_t epoch) const
{
  return reinterpret_cast<line_t*>(
      static_cast<char*>(base_) + 64 +
      64 * (kLinesPerRank * static_cast<size_t>(r) + epoch % kRoundLines));
}

shm_team_t::stop_t* shm_team_t::stop(int r) const
{
  return reinterpret_cast<stop_t*>(
      static_cast<char*>(base_) + 64 +
      64 * (kLinesPerRank * static_cast<size_t>(r) + kRoundLines));
}

char* shm_team_t::slot(int r, uint64_t epoch) const
{
  return static_cast<char*>(base_) +
         slots_offset(static_cast<size_t>(rank_n_)) +
         (2 * static_cast<size_t>(r) + (epoch & 1)) * slot_bytes_;
}

char* shm_team_t::ring(int r, uint64_t epoch) const
{
  const size_t n = static_cast<size_t>(rank_n_);
  return static_cast<char*>(base_) + slots_offset(n) +
         (2 * n + static_cast<size_t>(r)) * slot_bytes_ +
         (epoch % kRingBuffers) * ring_bytes_;
}

char* shm_team_t::data(const shm_op_t& op, int r, uint64_t epoch) const
{
  if (op.inline_) return line(r, epoch)->data;
  return op.ring_ ? ring(r, epoch) : slot(r, epoch);
}

bool shm_team_t::accepts(const shm_request_t& r) const
{
  const size_t n = static_cast<size_t>(rank_n_);
  switch (r.kind) {
    case shm_kind_t::barrier:
      return true;
    case shm_kind_t::broadcast:
      return true;
    case shm_kind_t::allgather:
      return r.size <= kMaxGatherBytes || use_cma(r);
    case shm_kind_t::alltoall:
      return (r.size <= kMaxGatherBytes / n && slot_bytes_ / n > 0) ||
             use_cma(r);
    case shm_kind_t::reduce:
    case shm_kind_t::allreduce:
      return r.item_size <= slot_bytes_;
    case shm_kind_t::reduce_scatter:
      return r.item_size <= slot_bytes_ / n;
  }
  return false;
}

bool shm_team_t::use_cma(const shm_request_t& r) const
{
  if (!cma_) return false;
  switch (r.kind) {
    case shm_kind_t::broadcast:
      return cma_rooted_ && r.size >= cma_bytes_ && r.size > 0;
    case shm_kind_t::allgather:
    case shm_kind_t::alltoall:
      return r.size >= cma_bytes_ && r.size > 0;
    case shm_kind_t::reduce:
      // (a split reduction keeps the slots: every rank reduces a share)
      // (up to one piece: above, the root's serial read and reduction
      // lose to the slots, where the other ranks' copies into their
      // slots run beside its reduction)
      return cma_rooted_ && r.count * r.item_size >= cma_bytes_ &&
             r.count * r.item_size <= kCmaPiece && r.count > 0 &&
             !(rank_n_ >= 3 && r.count * r.item_size >= split_bytes_);
    default:
      return false;
  }
}

void shm_team_t::run_alone(shm_op_t& op)
{
  if (op.req_.out) one_rank(op.req_);
  op.finish(shm_result_t());
}

void shm_team_t::start(shm_op_t* op, const shm_request_t& req, bool drive)
{
  const size_t n = static_cast<size_t>(rank_n_);
  shm_op_t& o = *op;
  o.req_ = req;
  if (!base_) {
    run_alone(o);
    return;
  }
  size_t total = 0;     // chunk units to move
  size_t in_bytes = 0;  // input and output extents, for overlaps
  size_t out_bytes = 0;
  bool safe_alias = false;  // in-place forms that need no snapshot
  const char* in = static_cast<const char*>(req.in);
  const char* out = static_cast<const char*>(req.out);
  switch (req.kind) {
    case shm_kind_t::barrier:
      break;
    case shm_kind_t::broadcast:
      o.chunk_ = slot_bytes_;
      total = req.size;
      break;
    case shm_kind_t::reduce:
    case shm_kind_t::allreduce:
      o.chunk_ = slot_bytes_ / std::max<size_t>(req.item_size, 1);
      total = req.count;
      in_bytes = out_bytes = req.count * req.item_size;
      safe_alias = in == out;
      o.split_ = n >= 3 && in_bytes >= split_bytes_;
      break;
    case shm_kind_t::reduce_scatter:
      o.chunk_ = slot_bytes_ / n / std::max<size_t>(req.item_size, 1);
      total = req.count;
      out_bytes = req.count * req.item_size;
      in_bytes = out_bytes * n;
      safe_alias = out == in || out == in + out_bytes * rank_me_;
      break;
    case shm_kind_t::allgather:
      o.chunk_ = slot_bytes_;
      total = req.size;
      in_bytes = req.size;
      out_bytes = req.size * n;
      safe_alias = in == out + req.size * rank_me_;
      break;
    case shm_kind_t::alltoall:
      o.chunk_ = slot_bytes_ / n;
      total = req.size;
      in_bytes = out_bytes = req.size * n;
      safe_alias = in == out;
      break;
  }
  set_needs(o);
  // the bytes each rank writes in a round when the collective takes one
  size_t part = 0;
  switch (req.kind) {
    case shm_kind_t::barrier:
      break;
    case shm_kind_t::broadcast:
    case shm_kind_t::allgather:
      part = req.size;
      break;
    case shm_kind_t::alltoall:
      part = req.size * n;
      o.chunk_ = part <= ring_bytes_ ? req.size : o.chunk_;
      break;
    case shm_kind_t::reduce:
    case shm_kind_t::allreduce:
      part = req.count * req.item_size;
      break;
    case shm_kind_t::reduce_scatter:
      part = req.count * req.item_size * n;
      o.chunk_ = part <= ring_bytes_ ? req.count : o.chunk_;
      break;
  }
  // the blocks of alltoall and reduce_scatter lie chunk_ units apart, packed
  // when the data is inline or in a ring buffer
  o.inline_ = !o.split_ && part <= kInlineBytes;
  o.ring_ = !o.split_ && !o.inline_ && part <= ring_bytes_;
  const size_t nchunks =
      total <= o.chunk_ || !o.chunk_ ? 1 : (total + o.chunk_ - 1) / o.chunk_;
  o.nrounds_ = o.split_ ? 2 * nchunks : nchunks;
  o.cma_ = use_cma(req);
  o.got_ = 0;
  if (o.cma_) {
    // the whole buffer in one round, then the round its owners wait in.
    // Other ranks read this rank's input while it writes its output: an
    // in-place allgather keeps the two apart, a reduce's root reads its
    // own input in order (reduce_cma), but an alltoall in place writes the
    // very block a peer reads
    o.inline_ = false;
    o.ring_ = false;
    o.nrounds_ = 2;
    if (req.kind == shm_kind_t::alltoall) safe_alias = false;
  }
  // reduce's root: nobody reads its slot, so it reduces from its input
  // where its output cannot overwrite an input not yet read (in place: only
  // as rank 0, whose input is the first operand, as the output is in
  // every later step)
  o.own_direct_ =
      req.kind == shm_kind_t::reduce && rank_me_ == req.root && !o.split_ &&
      !o.inline_ && !o.cma_ &&
      (in == out ? rank_me_ == 0 : !overlaps(in, in_bytes, out, out_bytes));
  set_pairs(o);
  // one chunk copies every input into the slots before it writes an
  // output; several would read inputs that earlier chunks' outputs
  // overwrote, unless the overlap is an in-place form the chunk order
  // keeps apart (the single copy reads inputs while outputs are written)
  if ((nchunks > 1 || o.cma_) && !safe_alias && out &&
      overlaps(in, in_bytes, out, out_bytes)) {
    o.snapshot_.assign(in, in + in_bytes);
    o.req_.in = o.snapshot_.data();
  }
  // reduce_scatter: nobody else reads this rank's own block, so it stays
  // out of the slot and the reduction reads it from the input (the copy
  // aside, if any), where the output cannot overwrite it first
  if (req.kind == shm_kind_t::reduce_scatter && !o.inline_ &&
      !overlaps(o.req_.in, in_bytes, out, out_bytes))
    o.own_direct_ = true;
  const bool writes_ring =
      o.ring_ && !(req.kind == shm_kind_t::broadcast && rank_me_ != req.root) &&
      !(req.kind == shm_kind_t::reduce && o.own_direct_);
  o.ring_part_ = writes_ring && part <= kPrefetchWriteBytes ? part : 0;
  // nothing queued and nobody polling (the usual blocking call): it is the
  // current collective at once, without the queue's lock. Whoever holds
  // polling_ is the only writer of current_ and broken_, and npending_ is
  // 0 only when there is no current collective. (A collective that another
  // thread queues meanwhile runs after this one: starts that race have no
  // order on any rank.)
  if (npending_.load(std::memory_order_acquire) == 0 &&
      !polling_.test_and_set(std::memory_order_acquire)) {
    const bool idle = npending_.load(std::memory_order_acquire) == 0 &&
                      broken_.errorcode == errorcode_t::done;
    if (idle) {
      current_ = op;
      // driven at once, with the flag still held: a collective that needs
      // no peer, or finds them there, ends without touching npending_
      // (each locked instruction also waits for this rank's last
      // published line to leave its store buffer)
      if (drive) {
        poll_held(false);
        return;
      }
      npending_.fetch_add(1, std::memory_order_release);
    }
    polling_.clear(std::memory_order_release);
    if (idle) return;
  }
  shm_result_t failed;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (broken_.errorcode == errorcode_t::done) {
      queue_.push_back(op);
      npending_.fetch_add(1, std::memory_order_release);
      return;
    }
    failed = broken_;
  }
  op->finish(failed);
}

void shm_team_t::write_phase(shm_op_t& op, char* mine)
{
  const shm_request_t& r = op.req_;
  const size_t n = static_cast<size_t>(rank_n_);
  // a split reduction's second round writes nothing: its share is in the
  // slot already (read_phase of the first)
  if (op.split_ && (op.round_ & 1)) return;
  if (op.own_direct_ && r.kind != shm_kind_t::reduce_scatter) return;
  const char* in = static_cast<const char*>(r.in);
  if (op.cma_) {
    // round 0: where the others read this rank's data (round 1: nothing)
    if (op.round_ == 0) {
      const void* at = r.kind == shm_kind_t::broadcast ? r.out : r.in;
      const uint64_t a = reinterpret_cast<uintptr_t>(at);
      std::memcpy(line(rank_me_, epoch_ + 1)->data, &a, sizeof(a));
    }
    return;
  }
  const size_t off = chunk_offset(op);
  switch (r.kind) {
    case shm_kind_t::barrier:
      return;
    case shm_kind_t::broadcast:
      if (rank_me_ == r.root && off < r.size)
        util::copy_bytes(mine, static_cast<char*>(r.out) + off,
                         std::min(op.chunk_, r.size - off));
      return;
    case shm_kind_t::allgather:
      if (off < r.size)
        util::copy_bytes(mine, in + off, std::min(op.chunk_, r.size - off));
      return;
    case shm_kind_t::alltoall:
      if (off < r.size) {
        size_t len = std::min(op.chunk_, r.size - off);
        for (size_t j = 0; j < n; ++j)
          util::copy_bytes(mine + j * op.chunk_, in + j * r.size + off, len);
      }
      return;
    case shm_kind_t::reduce:
    case shm_kind_t::allreduce:
      if (off >= r.count) return;
      if (op.child_ >= 0) {
        // this rank's input, then its child's, the pair's part of the
        // result in rank order (the child published the round: advance)
        r.op(in + off * r.item_size, data(op, op.child_, epoch_ + 1), mine,
             std::min(op.chunk_, r.count - off));
        return;
      }
      util::copy_bytes(mine, in + off * r.item_size,
                       std::min(op.chunk_, r.count - off) * r.item_size);
      return;
    case shm_kind_t::reduce_scatter:
      if (off < r.count) {
        size_t len = std::min(op.chunk_, r.count - off) * r.item_size;
        size_t block = r.count * r.item_size;
        for (size_t j = 0; j < n; ++j)
          if (!op.own_direct_ || j != static_cast<size_t>(rank_me_))
            util::copy_bytes(mine + j * op.chunk_ * r.item_size,
                             in + j * block + off * r.item_size, len);
      }
      return;
  }
}

void shm_team_t::read_phase(shm_op_t& op, uint64_t epoch)
{
  const shm_request_t& r = op.req_;
  const int n = rank_n_;
  const size_t off = chunk_offset(op);
  char* out = static_cast<char*>(r.out);
  if (op.split_) {
    read_share(op, epoch, off);
    return;
  }
  // this rank's own input, where it reads that from the caller's buffer
  const char* own =
      !op.own_direct_ ? nullptr
      : r.kind == shm_kind_t::reduce_scatter
          ? static_cast<const char*>(r.in) +
                (static_cast<size_t>(rank_me_) * r.count + off) * r.item_size
          : static_cast<const char*>(r.in) + off * r.item_size;
  switch (r.kind) {
    case shm_kind_t::barrier:
      return;
    case shm_kind_t::broadcast:
      if (rank_me_ != r.root && off < r.size)
        util::copy_bytes(out + off, data(op, r.root, epoch),
                         std::min(op.chunk_, r.size - off));
      return;
    case shm_kind_t::allgather:
      if (off < r.size) {
        size_t len = std::min(op.chunk_, r.size - off);
        const bool early = own_block_early(op);
        for (int j = 0; j < n; ++j)
          if (j != rank_me_ || !early)
            util::copy_bytes(out + j * r.size + off, data(op, j, epoch), len);
      }
      return;
    case shm_kind_t::alltoall:
      if (off < r.size) {
        size_t len = std::min(op.chunk_, r.size - off);
        for (int j = 0; j < n; ++j)
          util::copy_bytes(out + j * r.size + off,
                           data(op, j, epoch) + rank_me_ * op.chunk_, len);
      }
      return;
    case shm_kind_t::reduce:
    case shm_kind_t::allreduce:
    case shm_kind_t::reduce_scatter: {
      if (r.kind == shm_kind_t::reduce && rank_me_ != r.root) return;
      if (off >= r.count) return;
      size_t len = std::min(op.chunk_, r.count - off);
      size_t at = r.kind == shm_kind_t::reduce_scatter
                      ? rank_me_ * op.chunk_ * r.item_size
                      : 0;
      char* dst = out + off * r.item_size;
      auto src = [&](int j) -> const char* {
        return own && j == rank_me_ ? own : data(op, j, epoch) + at;
      };
      // in rank order, as every rank does: the same bytes everywhere (a
      // paired reduce's root skips the ranks whose input is in their
      // pair's part, which holds both in order)
      int j = 0;
      while ((op.merged_ >> j) & 1) ++j;
      const char* first = src(j);
      bool wrote = false;
      for (++j; j < n; ++j) {
        if ((op.merged_ >> j) & 1) continue;
        r.op(wrote ? dst : first, src(j), dst, len);
        wrote = true;
      }
      if (!wrote && dst != first)
        util::copy_bytes(dst, first, len * r.item_size);
      return;
    }
  }
}

bool shm_team_t::cma_read(shm_op_t& op, int j, void* dst, uint64_t remote,
                          size_t len, shm_result_t* result)
{
  char* l = static_cast<char*>(dst);
  const pid_t pid = static_cast<pid_t>(pids_[static_cast<size_t>(j)]);
  while (len > 0) {
    iovec li{l, len};
    iovec ri{reinterpret_cast<void*>(static_cast<uintptr_t>(remote)), len};
    const ssize_t got = process_vm_readv(pid, &li, 1, &ri, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int err = got < 0 ? errno : EFAULT;
      const int g = members_[static_cast<size_t>(j)];
      std::ostringstream os;
      os << "lci::" << op.req_.call << ": rank " << g;
      // the owner waits until this rank read its buffer: a process that
      // is gone failed
      if (err == ESRCH || (failed_ && failed_(failed_ctx_, g))) {
        result->errorcode = errorcode_t::fatal_peer_failure;
        os << " failed during round " << op.round_
           << " of the collective: fatal_peer_failure";
      } else {
        result->errorcode = errorcode_t::fatal;
        os << "'s buffer cannot be read by cross-memory attach ("
           << std::strerror(err)
           << "; LCI_COLL_SHM_CMA above the buffer size turns it off)";
      }
      result->rank = g;
      result->error = os.str();
      return false;
    }
    l += got;
    remote += static_cast<uint64_t>(got);
    len -= static_cast<size_t>(got);
  }
  return true;
}

// Round 0 of the single copy: each rank reads what it needs straight from
// the owners' buffers (their addresses are in their lines of the round),
// its own part locally. Round 1 reads nothing.
bool shm_team_t::read_cma(shm_op_t& op, uint64_t epoch, shm_result_t* result)
{
  if (op.round_ != 0) return true;
  const shm_request_t& r = op.req_;
  char* out = static_cast<char*>(r.out);
  auto where = [&](int j) {
    uint64_t a;
    std::memcpy(&a, line(j, epoch)->data, sizeof(a));
    return a;
  };
  const size_t me = static_cast<size_t>(rank_me_);
  switch (r.kind) {
    case shm_kind_t::broadcast:
      if (rank_me_ == r.root) return true;
      return cma_read(op, r.root, out, where(r.root), r.size, result);
    case shm_kind_t::allgather:
    case shm_kind_t::alltoall:
      // the others' blocks first (those read_arrived left): the owners
      // wait for them. Rank i starts at owner i + 1, so that two ranks
      // that run at once mostly read different owners.
      for (int k = 1; k < rank_n_; ++k) {
        const int j = (rank_me_ + k) % rank_n_;
        if (!((op.got_ >> j) & 1) && !read_block(op, j, epoch, result))
          return false;
      }
      if (!((op.got_ >> me) & 1)) read_block(op, rank_me_, epoch, result);
      return true;
    case shm_kind_t::reduce:
      if (rank_me_ != r.root) return true;
      return reduce_cma(op, epoch, result);
    default:
      return true;
  }
}

namespace
{
// the collectives whose single copy reads a block of every other rank
inline bool gathers(const shm_request_t& r)
{
  return r.kind == shm_kind_t::allgather || r.kind == shm_kind_t::alltoall;
}
}  // namespace

bool shm_team_t::read_block(shm_op_t& op, int j, uint64_t epoch,
                            shm_result_t* result)
{
  const shm_request_t& r = op.req_;
  const bool all = r.kind == shm_kind_t::allgather;
  const size_t me = static_cast<size_t>(rank_me_);
  char* dst = static_cast<char*>(r.out) + static_cast<size_t>(j) * r.size;
  if (j == rank_me_) {
    const char* mine = static_cast<const char*>(r.in) + (all ? 0 : me * r.size);
    if (mine != dst) util::copy_large(dst, mine, r.size);
  } else {
    uint64_t at;
    std::memcpy(&at, line(j, epoch)->data, sizeof(at));
    if (!cma_read(op, j, dst, at + (all ? 0 : me * r.size), r.size, result))
      return false;
  }
  op.got_ |= uint64_t(1) << j;
  return true;
}

bool shm_team_t::read_arrived(shm_op_t& op, uint64_t epoch,
                              shm_result_t* result)
{
  const desc_t& me = line(rank_me_, epoch)->desc;
  bool missing = false;
  for (int k = 1; k < rank_n_; ++k) {
    const int j = (rank_me_ + k) % rank_n_;
    if ((op.got_ >> j) & 1) continue;
    const line_t* l = line(j, epoch);
    if (l->seq.load(std::memory_order_acquire) < epoch) {
      missing = true;
      continue;
    }
    // a description that differs is advance's to report, after its wait
    if (l->desc.failed != -1 || !(l->desc == me)) continue;
    if (!read_block(op, j, epoch, result)) return false;
  }
  if (missing && !((op.got_ >> rank_me_) & 1))
    return read_block(op, rank_me_, epoch, result);
  return true;
}

// A single-copy reduce at its root: piece by piece (a few tens of KiB,
// which stay in this core's cache between the read and the reduction),
// every other rank's input read into scratch by cross-memory attach and
// reduced in rank order into the output, as the slot form does.
bool shm_team_t::reduce_cma(shm_op_t& op, uint64_t epoch, shm_result_t* result)
{
  const shm_request_t& r = op.req_;
  const size_t item = r.item_size;
  const size_t step = std::max<size_t>(1, kCmaPiece / item);
  const size_t piece = step * item;
  if (scratch_.size() < 3 * piece) scratch_.resize(3 * piece);
  char* a_buf = scratch_.data();
  char* b_buf = a_buf + piece;
  char* own_buf = b_buf + piece;
  const char* in = static_cast<const char*>(r.in);
  char* out = static_cast<char*>(r.out);
  // in place at a root other than rank 0: the output, written from the
  // first step, would overwrite the root's input before its turn
  const bool keep_own = in == out && rank_me_ != 0;
  for (size_t off = 0; off < r.count; off += step) {
    const size_t len = std::min(step, r.count - off);
    const size_t bytes = len * item;
    char* dst = out + off * item;
    const char* own = in + off * item;
    if (keep_own) {
      std::memcpy(own_buf, own, bytes);
      own = own_buf;
    }
    // rank j's piece: this rank's own, or read into buf
    auto get = [&](int j, char* buf) -> const char* {
      if (j == rank_me_) return own;
      uint64_t at;
      std::memcpy(&at, line(j, epoch)->data, sizeof(at));
      return cma_read(op, j, buf, at + off * item, bytes, result) ? buf
                                                                  : nullptr;
    };
    const char* x = get(0, a_buf);
    const char* y = x ? get(1, b_buf) : nullptr;
    if (!y) return false;
    r.op(x, y, dst, len);
    for (int j = 2; j < rank_n_; ++j) {
      const char* z = get(j, a_buf);
      if (!z) return false;
      r.op(dst, z, dst, len);
    }
  }
  return true;
}

// Round 2k of a split reduction: this rank's share (block_of the chunk) of
// every rank's input, reduced in rank order into its slot of the next
// round, which every rank finished reading (round 2k - 1) before it
// published 2k. Round 2k + 1: every rank's share copied out (the root's
// only, for reduce). Each share is computed once, so every rank gets the
// same bytes.
void shm_team_t::read_share(shm_op_t& op, uint64_t epoch, size_t off)
{
  const shm_request_t& r = op.req_;
  const int n = rank_n_;
  if (off >= r.count) return;
  const size_t len = std::min(op.chunk_, r.count - off);
  const size_t item = r.item_size;
  if ((op.round_ & 1) == 0) {
    const block_t b = block_of(len, n, rank_me_);
    if (b.len == 0) return;
    const size_t at = b.off * item;
    char* dst = slot(rank_me_, epoch + 1) + at;
    r.op(slot(0, epoch) + at, slot(1, epoch) + at, dst, b.len);
    for (int j = 2; j < n; ++j) r.op(dst, slot(j, epoch) + at, dst, b.len);
    return;
  }
  if (r.kind == shm_kind_t::reduce && rank_me_ != r.root) return;
  char* out = static_cast<char*>(r.out) + off * item;
  for (int j = 0; j < n; ++j) {
    const block_t b = block_of(len, n, j);
    if (b.len)
      util::copy_large(out + b.off * item, slot(j, epoch) + b.off * item,
                       b.len * item);
  }
}

size_t shm_team_t::chunk_offset(const shm_op_t& op) const
{
  return (op.split_ ? op.round_ / 2 : op.round_) * op.chunk_;
}

bool shm_team_t::own_block_early(const shm_op_t& op) const
{
  return op.ring_ && op.req_.kind == shm_kind_t::allgather;
}

bool shm_team_t::needs_all(const shm_op_t& op) const
{
  return op.all_ || (op.split_ && (op.round_ & 1) == 0) ||
         (op.cma_ && op.round_ == 1 && rank_me_ == op.req_.root &&
          op.req_.kind == shm_kind_t::broadcast);
}

bool shm_team_t::needs(const shm_op_t& op, int j) const
{
  // a single copy's second round: an owner waits until the ranks that read
  // its buffer are done (broadcast: the root for every other rank; reduce:
  // every other rank for the root; allgather, alltoall: every rank for
  // every other)
  if (op.cma_ && op.round_ == 1) {
    if (op.req_.kind == shm_kind_t::broadcast) return rank_me_ == op.req_.root;
    if (op.req_.kind == shm_kind_t::reduce)
      return rank_me_ != op.req_.root && j == op.req_.root;
  }
  // every rank reads a share of every slot in a split reduction's first
  // round; the second is a reduce's or allreduce's plain read
  if (op.split_ && (op.round_ & 1) == 0) return true;
  return (op.needs_ >> j) & 1;
}

void shm_team_t::set_needs(shm_op_t& op) const
{
  const shm_request_t& r = op.req_;
  const uint64_t others =
      (rank_n_ >= 64 ? ~uint64_t(0) : (uint64_t(1) << rank_n_) - 1) &
      ~(uint64_t(1) << rank_me_);
  op.all_ = r.kind != shm_kind_t::broadcast && r.kind != shm_kind_t::reduce;
  if (r.kind == shm_kind_t::broadcast)
    op.needs_ = rank_me_ != r.root ? uint64_t(1) << r.root : 0;
  else if (r.kind == shm_kind_t::reduce)
    op.needs_ = rank_me_ == r.root ? others : 0;
  else
    op.needs_ = others;
}

void shm_team_t::set_pairs(shm_op_t& op)
{
  const shm_request_t& r = op.req_;
  op.child_ = -1;
  op.merged_ = 0;
  const bool all = r.kind == shm_kind_t::allreduce;
  if (!pairs_ || hierarchical() || (r.kind != shm_kind_t::reduce && !all) ||
      op.inline_ || op.split_ || op.cma_ || rank_n_ < 3)
    return;
  // neighbours j, j + 1 that are both not a reduce's root pair up, from
  // rank 0 on: the same pairs on every rank, each rank in at most one
  const int root = all ? -1 : r.root;
  for (int j = 0; j + 1 < rank_n_;) {
    if (j == root || j + 1 == root) {
      ++j;
      continue;
    }
    // (an allreduce's ranks wait for every rank anyway)
    if (rank_me_ == j) {
      op.child_ = j + 1;
      if (!all) op.needs_ = uint64_t(1) << (j + 1);
    }
    op.merged_ |= uint64_t(1) << (j + 1);
    j += 2;
  }
  if (rank_me_ == root) op.needs_ &= ~op.merged_;
  if (op.merged_) paired_runs_.fetch_add(1, std::memory_order_relaxed);
}

namespace
{
// Rank g described its round as d where this rank described it as me, or
// published it without data (d.failed: an earlier stage of a hierarchical
// collective failed at its node's representative): *result says so. Out of
// line, so that advance's usual pass stays short.
__attribute__((noinline)) void report_peer(const char* call, int g,
                                           const desc_t& d, const desc_t& me,
                                           shm_result_t* result)
{
  std::ostringstream os;
  os << "lci::" << call << ": ";
  if (d.failed != -1) {
    // this node's representative could not get the data
    if (d.failed >= 0)
      os << "rank " << d.failed << " failed (reported by rank " << g
         << ", this node's representative): fatal_peer_failure";
    else
      os << "the point-to-point part between the nodes failed at rank " << g
         << ", this node's representative (do all ranks pass the "
         << "same sizes, counts and root?)";
    result->errorcode =
        d.failed >= 0 ? errorcode_t::fatal_peer_failure : errorcode_t::fatal;
    result->rank = d.failed >= 0 ? d.failed : g;
    result->error = os.str();
    return;
  }
  os << "rank " << g << " called " << kind_name(d.kind) << " with " << d.bytes
     << " bytes (item size " << d.item_size << ", root " << d.root
     << ") where this rank called " << kind_name(me.kind) << " with "
     << me.bytes << " bytes (item size " << me.item_size << ", root " << me.root
     << ") (do all ranks pass the same sizes, counts and root?)";
  result->errorcode = errorcode_t::fatal;
  result->rank = g;
  result->error = os.str();
}

}  // namespace

// Rank j has not published the round this rank waits for: 0 (wait on),
// or -1 when it never will (it stopped, or it or, hierarchically, a rank of
// this node failed; *result says why). Out of line, so that the usual
// pass of wait_for, which finds every line published, stays short.
__attribute__((noinline)) int shm_team_t::missing(shm_op_t& op, int j,
                                                  uint64_t e,
                                                  shm_result_t* result)
{
  const int g = members_[static_cast<size_t>(j)];
  if (const int32_t st = stop(j)->stopped.load(std::memory_order_acquire)) {
    // A rank publishes its last round (a failed stage's round carries the
    // failure for the ranks that wait for it) before it stops, so round e
    // may have arrived since this rank read the line: the stop's acquire
    // makes that round visible, and the next poll reads it.
    if (line(j, e)->seq.load(std::memory_order_acquire) >= e) return 0;
    std::ostringstream os;
    os << "lci::" << op.req_.call << ": ";
    if (st >= kStoppedPeer) {
      result->errorcode = errorcode_t::fatal_peer_failure;
      result->rank = st - kStoppedPeer;
      os << "rank " << result->rank << " failed (reported by rank " << g
         << "): fatal_peer_failure";
    } else {
      result->errorcode = errorcode_t::fatal;
      result->rank = g;
      os << "rank " << g
         << " stopped running collectives after an error and will not "
            "join round "
         << op.round_
         << " (do all ranks pass the same sizes, counts and root?)";
    }
    result->error = os.str();
    return -1;
  }
  if (!failed_) return 0;
  int dead = failed_(failed_ctx_, g) ? g : -1;
  // hierarchical: a representative that lost a rank of its node during
  // an earlier stage never publishes the stage this rank waits in
  for (size_t m = 0; dead < 0 && hierarchical() && m < members_.size(); ++m)
    if (failed_(failed_ctx_, members_[m])) dead = members_[m];
  if (dead < 0) return 0;
  result->errorcode = errorcode_t::fatal_peer_failure;
  result->rank = dead;
  std::ostringstream os;
  os << "lci::" << op.req_.call << ": rank " << dead;
  if (dead == g)
    os << " failed before it joined round " << op.round_
       << " of the collective: fatal_peer_failure";
  else
    os << " of this node failed: fatal_peer_failure";
  result->error = os.str();
  return -1;
}

int shm_team_t::wait_for(shm_op_t& op, uint64_t e, bool all,
                         shm_result_t* result)
{
  if (all && all_seen_ >= e) return 1;
  // A rank that runs ahead (it needs nobody) checks the readers' latest
  // round, which this rank completed, before the older one it needs: when
  // they all published it, the next checks read no line at all, and the
  // readers' lines of the rounds in between stay in their own caches.
  const uint64_t latest = all && epoch_ > e ? epoch_ : e;
  if (op.waiting_ == 0) op.seen_ = latest;
  for (; op.waiting_ < rank_n_; ++op.waiting_) {
    const int j = op.waiting_;
    if (j == rank_me_ || !(all || needs(op, j))) continue;
    if (latest > e &&
        line(j, latest)->seq.load(std::memory_order_acquire) >= latest)
      continue;
    if (line(j, e)->seq.load(std::memory_order_acquire) >= e) {
      op.seen_ = e;
      continue;
    }
    // a blocking caller spins on this line until it changes
    op.wait_seq_.store(&line(j, e)->seq, std::memory_order_relaxed);
    op.wait_value_.store(e, std::memory_order_relaxed);
    return missing(op, j, e, result);
  }
  // broadcast and reduce need only some ranks; the others need every one
  if (all || needs_all(op)) all_seen_ = std::max(all_seen_, op.seen_);
  return 1;
}

bool shm_team_t::advance(shm_op_t& op, shm_result_t* result)
{
  while (op.round_ < op.nrounds_) {
    const uint64_t e = epoch_ + 1;
    if (!op.written_) {
      // an input that an earlier stage still produces
      if (!op.gate_.load(std::memory_order_acquire)) return false;
      // slot e % 2 was last read in round e - 2 at the latest, line
      // e % kRoundLines in round e - kRoundLines, ring buffer
      // e % kRingBuffers in round e - kRingBuffers, by ranks that have all
      // finished it once they published the round after (usually known
      // already: most rounds wait for every rank)
      const uint64_t ring = op.inline_ ? kRoundLines
                            : op.ring_ ? kRingBuffers
                                       : 2;
      uint64_t need = e > ring - 1 ? e - (ring - 1) : 0;
      // not known yet: wait until the others are within half a ring (see
      // kRoundLines), so that the next check is that many rounds away
      if (ring > 2 && all_seen_ < need)
        need = std::min(epoch_, need + ring / 2 - 1);
      int w = wait_for(op, need, true, result);
      if (w <= 0) return w < 0;
      // a paired reduce's first rank writes its input reduced with its
      // child's, so it waits for the child first (and compares the two
      // calls once it published, as every rank it needs)
      if (op.child_ >= 0) {
        const std::atomic<uint64_t>& seq = line(op.child_, e)->seq;
        if (seq.load(std::memory_order_acquire) < e) {
          op.wait_seq_.store(&seq, std::memory_order_relaxed);
          op.wait_value_.store(e, std::memory_order_relaxed);
          return missing(op, op.child_, e, result) < 0;
        }
      }
      desc_t d = describe(op.req_);
      if (op.fail_rank_ != -1) {
        // tell the ranks that wait for this one's data, and stop (the
        // caller has the error of the earlier stage)
        d.failed = op.fail_rank_;
        line_t* mine = line(rank_me_, e);
        mine->desc = d;
        mine->seq.store(e, std::memory_order_release);
        epoch_ = e;
        result->errorcode = op.fail_rank_ >= 0 ? errorcode_t::fatal_peer_failure
                                               : errorcode_t::fatal;
        result->rank = op.fail_rank_ >= 0 ? op.fail_rank_ : rank_me_;
        result->error = "lci::" + std::string(op.req_.call) +
                        ": the point-to-point part failed";
        return true;
      }
      write_phase(op, data(op, rank_me_, e));
      line_t* mine = line(rank_me_, e);
      mine->desc = d;
      mine->seq.store(e, std::memory_order_release);
      prefetch_for_write(line(rank_me_, e + 1));
      // an allgather's own block goes to the output now, from the ring
      // buffer just written (never overlapping the caller's buffers), while
      // the others still write theirs, instead of after the wait
      if (own_block_early(op)) {
        const shm_request_t& r = op.req_;
        char* dst =
            static_cast<char*>(r.out) + static_cast<size_t>(rank_me_) * r.size;
        if (dst != r.in) util::copy_bytes(dst, data(op, rank_me_, e), r.size);
      }
      // the next ring buffer, once every rank is known to be done with it
      // (it last carried round e + 1 - kRingBuffers): see
      // kPrefetchWriteBytes
      if (op.ring_part_ && all_seen_ + kRingBuffers > e + 1) {
        const char* next = data(op, rank_me_, e + 1);
        for (size_t i = 0; i < op.ring_part_; i += 64)
          prefetch_for_write(next + i);
      }
      op.written_ = true;
      op.waiting_ = 0;
    }
    // an allgather's or alltoall's single copy reads each owner's block
    // once that owner arrived, and its own while it waits for the rest:
    // with more ranks than cores the copies then fill the time until the
    // last owner gets a core, where reading only once all arrived would
    // leave this core to yields in between
    if (op.cma_ && op.round_ == 0 && gathers(op.req_) &&
        !read_arrived(op, e, result))
      return true;
    // the ranks whose data (or arrival) this rank needs: broadcast's root
    // and reduce's other ranks need nobody, so they go on at once
    int w = wait_for(op, e, false, result);
    if (w <= 0) return w < 0;
    // every rank must have called the same collective with the same sizes
    const desc_t& me = line(rank_me_, e)->desc;
    for (int j = 0; j < rank_n_; ++j) {
      if (j == rank_me_ || !needs(op, j)) continue;
      const desc_t& d = line(j, e)->desc;
      if (d.failed == -1 && d == me) continue;
      report_peer(op.req_.call, members_[static_cast<size_t>(j)], d, me,
                  result);
      return true;
    }
    if (!op.cma_)
      read_phase(op, e);
    else if (!read_cma(op, e, result))
      return true;
    // A rank that waits while the others need nobody (a broadcast's
    // readers, a reduce's root) usually finds them rounds ahead: their
    // next round's line is fetched now, while this call returns and the
    // next one starts, instead of on the next wait.
    if (!needs_all(op))
      for (uint64_t m = op.needs_; m; m &= m - 1) {
        const int j = __builtin_ctzll(m);
        __builtin_prefetch(line(j, e + 1), 0);
        if (op.inline_ || op.ring_)
          for (uint64_t k = 2; k <= kReadAhead; ++k)
            __builtin_prefetch(line(j, e + k), 0);
      }
    epoch_ = e;
    ++op.round_;
    op.written_ = false;
    op.waiting_ = 0;
  }
  return true;
}

namespace
{
// Loads of an awaited line's round counter before run_small hands its
// round over to the general path: a peer that runs arrives within them
// (about a microsecond), and one that does not (it computes, it stopped,
// it failed) is the general path's to wait for with every check.
constexpr unsigned kSmallSpins = 1024;
// With more ranks than cores, how long run_small waits for a peer by
// giving its core away between looks before it hands over. The peer
// usually shares this core and needs it: a yield lets it run, and the next
// look finds its round, where the general path would pay a poll and a
// progress call per look. A peer descheduled on another core for other
// jobs' time slices takes milliseconds. Past the bound, the general path
// waits with every check (a failed or stopped peer, the device's
// progress), so the bound is also how late this wait notices them.
constexpr std::chrono::milliseconds kSmallYieldTime{10};

// Two descriptions are the same call (and neither is a failed stage's):
// the whole 24 bytes, the `failed` word included (-1 in this rank's).
inline bool same_desc(const desc_t& a, const desc_t& b)
{
  static_assert(sizeof(desc_t) == 24, "three words");
  uint64_t x[3], y[3];
  std::memcpy(x, &a, sizeof x);
  std::memcpy(y, &b, sizeof y);
  return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2])) == 0;
}
}  // namespace

bool shm_team_t::small_free(uint64_t need)
{
  // as wait_for and advance: the latest round this rank completed first,
  // else the round that puts the next check kRoundLines / 2 rounds away
  const uint64_t target = std::min(epoch_, need + kRoundLines / 2 - 1);
  uint64_t seen = epoch_;
  for (int j = 0; j < rank_n_; ++j) {
    if (j == rank_me_) continue;
    if (line(j, epoch_)->seq.load(std::memory_order_acquire) >= epoch_)
      continue;
    if (line(j, target)->seq.load(std::memory_order_acquire) < target)
      return false;
    seen = target;
  }
  all_seen_ = std::max(all_seen_, seen);
  return true;
}

inline void shm_team_t::small_write(const shm_request_t& r, char* mine) const
{
  auto* dst = reinterpret_cast<unsigned char*>(mine);
  const char* in = static_cast<const char*>(r.in);
  const size_t n = static_cast<size_t>(rank_n_);
  switch (r.kind) {
    case shm_kind_t::barrier:
      return;
    case shm_kind_t::broadcast:
      if (rank_me_ == r.root) util::copy_small(dst, r.out, r.size);
      return;
    case shm_kind_t::allgather:
      util::copy_small(dst, in, r.size);
      return;
    case shm_kind_t::alltoall:
      for (size_t j = 0; j < n; ++j)
        util::copy_small(dst + j * r.size, in + j * r.size, r.size);
      return;
    case shm_kind_t::reduce:
    case shm_kind_t::allreduce:
      util::copy_small(dst, in, r.count * r.item_size);
      return;
    case shm_kind_t::reduce_scatter: {
      const size_t block = r.count * r.item_size;
      for (size_t j = 0; j < n; ++j)
        util::copy_small(dst + j * block, in + j * block, block);
      return;
    }
  }
}

inline void shm_team_t::small_read(const shm_request_t& r, uint64_t e) const
{
  auto* out = static_cast<unsigned char*>(r.out);
  const int n = rank_n_;
  switch (r.kind) {
    case shm_kind_t::barrier:
      return;
    case shm_kind_t::broadcast:
      if (rank_me_ != r.root)
        util::copy_small(out, line(r.root, e)->data, r.size);
      return;
    case shm_kind_t::allgather:
      for (int j = 0; j < n; ++j)
        util::copy_small(out + j * r.size, line(j, e)->data, r.size);
      return;
    case shm_kind_t::alltoall:
      for (int j = 0; j < n; ++j)
        util::copy_small(out + j * r.size, line(j, e)->data + rank_me_ * r.size,
                         r.size);
      return;
    case shm_kind_t::reduce:
    case shm_kind_t::allreduce:
    case shm_kind_t::reduce_scatter: {
      if (r.kind == shm_kind_t::reduce && rank_me_ != r.root) return;
      if (r.count == 0) return;
      const size_t at = r.kind == shm_kind_t::reduce_scatter
                            ? rank_me_ * r.count * r.item_size
                            : 0;
      // in rank order, as every rank does: the same bytes everywhere
      r.op(line(0, e)->data + at, line(1, e)->data + at, out, r.count);
      for (int j = 2; j < n; ++j)
        r.op(out, line(j, e)->data + at, out, r.count);
      return;
    }
  }
}

// The op in the state advance leaves it in after its write of the round
// (one round, inline, written), made the current collective. Its chunk is
// the whole input (block spacing in the line for alltoall and
// reduce_scatter), which is what start gives a small round's reads.
__attribute__((noinline)) void shm_team_t::small_hand_over(
    shm_op_t& op, const shm_request_t& req)
{
  op.req_ = req;
  op.chunk_ = req.kind == shm_kind_t::broadcast ||
                      req.kind == shm_kind_t::allgather ||
                      req.kind == shm_kind_t::alltoall
                  ? req.size
                  : req.count;
  op.nrounds_ = 1;
  op.split_ = false;
  op.inline_ = true;
  set_needs(op);
  op.round_ = 0;
  op.written_ = true;
  op.waiting_ = 0;
  current_ = &op;
  ++small_handovers_;
  npending_.fetch_add(1, std::memory_order_release);
  polling_.clear(std::memory_order_release);
}

__attribute__((noinline)) bool shm_team_t::small_yield(
    std::chrono::steady_clock::time_point* until)
{
  const auto now = std::chrono::steady_clock::now();
  if (*until == std::chrono::steady_clock::time_point{})
    *until = now + kSmallYieldTime;
  else if (now >= *until)
    return false;
  sched_yield();
  return true;
}

shm_team_t::small_t shm_team_t::run_small(const shm_request_t& req,
                                          shm_op_t* (*make)(void*), void* ctx)
{
  const size_t n = static_cast<size_t>(rank_n_);
  // the bytes each rank writes in the round (a count above the line's
  // bytes stands for itself: too many), and the ranks this rank needs (as
  // set_needs: broadcast's root and reduce's other ranks need nobody)
  const uint64_t others =
      (rank_n_ >= 64 ? ~uint64_t(0) : (uint64_t(1) << rank_n_) - 1) &
      ~(uint64_t(1) << rank_me_);
  uint64_t needs = others;
  size_t part = 0;
  switch (req.kind) {
    case shm_kind_t::barrier:
      break;
    case shm_kind_t::broadcast:
      part = req.size;
      needs = rank_me_ != req.root ? uint64_t(1) << req.root : 0;
      break;
    case shm_kind_t::allgather:
      part = req.size;
      break;
    case shm_kind_t::alltoall:
      part = req.size > kInlineBytes ? req.size : req.size * n;
      break;
    case shm_kind_t::reduce:
      needs = rank_me_ == req.root ? others : 0;
      [[fallthrough]];
    case shm_kind_t::allreduce:
      part = req.count > kInlineBytes ? req.count : req.count * req.item_size;
      // a reduction split into shares takes two rounds (LCI_COLL_SHM_SPLIT
      // can put the split point below the control line's bytes)
      if (n >= 3 && part >= split_bytes_) return small_t::declined;
      break;
    case shm_kind_t::reduce_scatter:
      part =
          req.count > kInlineBytes ? req.count : req.count * req.item_size * n;
      break;
    default:
      return small_t::declined;
  }
  if (__builtin_expect(part > kInlineBytes || !base_, 0))
    return small_t::declined;
  // nothing queued or running, and nobody else polling: as in start
  if (npending_.load(std::memory_order_acquire) != 0 ||
      polling_.test_and_set(std::memory_order_acquire))
    return small_t::declined;
  const uint64_t e = epoch_ + 1;
  // line e % kRoundLines was last read in round e - kRoundLines, by ranks
  // that finished it once they published the round after
  const uint64_t need = e > kRoundLines - 1 ? e - (kRoundLines - 1) : 0;
  if (__builtin_expect(npending_.load(std::memory_order_acquire) != 0 ||
                           broken_.errorcode != errorcode_t::done ||
                           (all_seen_ < need && !small_free(need)),
                       0)) {
    polling_.clear(std::memory_order_release);
    return small_t::declined;
  }
  const desc_t d = describe(req);
  line_t* mine = line(rank_me_, e);
  small_write(req, mine->data);
  mine->desc = d;
  mine->seq.store(e, std::memory_order_release);
  prefetch_for_write(line(rank_me_, e + 1));
  ++small_runs_;
  // with more ranks than cores the one awaited may need this core: one
  // look, then a yield before each next look, for a bounded time
  // (small_yield); with a core per rank a spin of kSmallSpins loads
  unsigned budget = oversubscribed_ ? 1 : kSmallSpins;
  std::chrono::steady_clock::time_point until{};
  for (uint64_t m = needs; m; m &= m - 1) {
    const line_t* l = line(__builtin_ctzll(m), e);
    while (l->seq.load(std::memory_order_acquire) < e)
      if (__builtin_expect(--budget == 0, 0)) {
        if (oversubscribed_ && small_yield(&until)) {
          budget = 1;
          continue;
        }
        small_hand_over(*make(ctx), req);
        return small_t::handed_over;
      }
    if (__builtin_expect(!same_desc(l->desc, d), 0)) {
      small_hand_over(*make(ctx), req);
      return small_t::handed_over;
    }
  }
  try {
    small_read(req, e);
  } catch (...) {
    // the user's operator threw: the round is done here all the same
    epoch_ = e;
    polling_.clear(std::memory_order_release);
    throw;
  }
  // every rank this one needed published e: when that is every other
  // rank, the next rounds' checks of line reuse read no line
  if (needs == others) all_seen_ = e;
  // a rank that reads others that need nobody (a broadcast's readers, a
  // reduce's root) finds them rounds ahead: their next lines are fetched
  // now, so that their transfers overlap (as advance does)
  if (req.kind == shm_kind_t::broadcast || req.kind == shm_kind_t::reduce)
    for (uint64_t m = needs; m; m &= m - 1) {
      const int j = __builtin_ctzll(m);
      for (uint64_t k = 1; k <= kReadAhead; ++k)
        __builtin_prefetch(line(j, e + k), 0);
    }
  epoch_ = e;
  polling_.clear(std::memory_order_release);
  return small_t::done;
}

bool shm_team_t::poll()
{
  for (;;) {
    if (npending_.load(std::memory_order_acquire) == 0) return true;
    if (polling_.test_and_set(std::memory_order_acquire)) return false;
    const int s = poll_held(true);
    if (s >= 0) return s != 0;
  }
}

int shm_team_t::poll_held(bool counted)
{
  shm_op_t* ended = nullptr;
  bool empty = false;
  shm_result_t r;
  std::vector<shm_op_t*> dropped;  // queued behind a failure
  try {
    for (;;) {
      if (!current_) {
        std::lock_guard<std::mutex> lock(queue_mu_);
        if (queue_.empty()) {
          empty = true;
          break;
        }
        current_ = queue_.front();
        queue_.pop_front();
        counted = true;
      }
      if (!advance(*current_, &r)) break;
      if (r.errorcode != errorcode_t::done) {
        // the ranks no longer agree on the rounds: every later
        // collective of the team fails with this error
        if (base_)
          stop(rank_me_)->stopped.store(
              r.errorcode == errorcode_t::fatal_peer_failure && r.rank >= 0
                  ? kStoppedPeer + r.rank
                  : kStoppedFatal,
              std::memory_order_release);
        std::lock_guard<std::mutex> lock(queue_mu_);
        broken_ = r;
        dropped.assign(queue_.begin(), queue_.end());
        npending_.fetch_sub(queue_.size(), std::memory_order_relaxed);
        queue_.clear();
      }
      if (counted) npending_.fetch_sub(1, std::memory_order_release);
      ended = current_;
      current_ = nullptr;
      break;
    }
  } catch (...) {
    if (!counted) npending_.fetch_add(1, std::memory_order_release);
    polling_.clear(std::memory_order_release);
    throw;
  }
  // a current collective that goes on is counted before others may poll
  if (!ended && !empty && !counted)
    npending_.fetch_add(1, std::memory_order_release);
  polling_.clear(std::memory_order_release);
  if (!ended) return empty ? 1 : 0;
  // outside the flag: a completion may start the next collective; one
  // collective at a time, so the blocking path allocates nothing
  std::exception_ptr first;
  try {
    ended->finish(r);
  } catch (...) {
    first = std::current_exception();
  }
  for (shm_op_t* d : dropped) {
    try {
      d->finish(r);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  return -1;
}

}  // namespace lci::coll
