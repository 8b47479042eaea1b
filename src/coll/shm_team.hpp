// Node-local collectives through one shared-memory segment (docs/
// COLLECTIVES.md, "Shared-memory collectives").
//
// A team is the ranks of a runtime when all of them run on one node: they
// share a segment with, per rank, a ring of control cache lines, one per
// round modulo its length (a round counter, the round's check word and a
// small round's data), two data slots and a ring of sixteen data buffers
// for rounds of a few KiB. A collective is a sequence of rounds; in round
// e every rank waits until every rank published e - 1 (so all of them
// finished reading round e - 2, the last user of slot e % 2; a small
// round, whose data travels in its control line or its ring buffer, waits
// only for the round that last used that line or buffer, up to 63 or 15
// rounds back), copies its part of the input into its slot
// e % 2 (or, when it is small, its control line or ring buffer of round
// e), publishes e in that line
// (release), waits until the ranks it needs published e
// (acquire; every rank, except that a broadcast's root and a reduce's
// non-roots need nobody and a broadcast's other ranks only the root), and
// copies (or reduces) what it needs out of the slots. No other handshake.
// Data is copied once into and once out of the segment; a collective larger
// than a slot runs in several rounds (a pipeline of chunks). Where the
// kernel allows cross-memory attach, broadcast, allgather, alltoall and
// reduce of 16 KiB and more (reduce up to 256 KiB; broadcast and reduce
// only with at most as many ranks as cores) copy once instead: in round 0 the
// owners publish their buffers' addresses and the readers read them with
// process_vm_readv (a reduce's root reduces what it read), in round 1 each
// owner waits until its readers are done (shm_op_t::cma_).
//
// When the ranks span several nodes, each node's ranks share a segment of
// their own and the team is hierarchical: barrier, broadcast, reduce and
// allreduce run as node-local stages through the segment plus
// point-to-point between one representative per node (coll_graph.cpp,
// hier_t); ranks alone on their node have no segment, their node-local
// stages are local copies. Ranks are then the node's (local) ranks inside
// the team; errors name the runtime's ranks.
//
// The interface is small on purpose: the collective layer (coll_graph.hpp)
// builds a request from a call's arguments, asks whether the team takes it
// (`accepts`), starts it, and drives it with `poll` (from its blocking wait
// or from progress). Collectives of one team run one after the other in the
// order they were started, which is the same on every rank (the ordering
// rule of a matching engine). A blocking collective of one small round
// that finds the team idle runs it directly (`run_small`) and falls back
// to that machinery for anything unusual.
#ifndef LCI_COLL_SHM_TEAM_HPP
#define LCI_COLL_SHM_TEAM_HPP

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/coll_support.hpp"
#include "lci.hpp"

namespace lci::coll
{

enum class shm_kind_t : uint8_t {
  barrier = 1,
  broadcast,
  reduce,
  allreduce,
  reduce_scatter,
  allgather,
  alltoall
};

// "barrier", ... ("collective" for other values)
const char* kind_name(uint64_t kind);

// One collective's arguments at this rank. Sizes: broadcast `size` bytes;
// reduce, allreduce, reduce_scatter `count` items of `item_size` bytes (per
// rank's block for reduce_scatter); allgather, alltoall `size` bytes per
// rank (per block).
struct shm_request_t {
  shm_kind_t kind = shm_kind_t::barrier;
  const char* call = "";  // "barrier", ... for messages
  const void* in = nullptr;
  void* out = nullptr;
  size_t size = 0;
  size_t count = 0;
  size_t item_size = 0;
  reduce_op_t op = nullptr;
  int root = 0;
};

// How a collective ended: errorcode done, or fatal_peer_failure with the
// failed rank, or fatal with `error` (ranks passed different arguments).
struct shm_result_t {
  errorcode_t errorcode = errorcode_t::done;
  int rank = -1;
  std::string error;
};

// A collective in progress; `finish` runs once, after it ended, outside the
// team's lock, from the thread that drove it to its end. The team does not
// own it: a blocking caller keeps it on its stack until `finish` ran, a
// nonblocking one on the heap, where `finish` (or `abandon`, for a
// collective still queued when the team is freed) deletes it. No allocation
// on the blocking path: a small collective costs little more than its
// cache-line transfers.
class shm_op_t
{
 public:
  virtual ~shm_op_t() = default;
  virtual void finish(const shm_result_t& result) = 0;
  virtual void abandon() {}
  // A stage whose input an earlier stage of a hierarchical collective
  // produces: the team holds it, and the collectives queued behind it,
  // until open_gate. open_gate(r) with r >= 0: the earlier stage failed
  // because rank r did; the stage publishes its round without data, and
  // every rank that waits for it ends with fatal_peer_failure naming r;
  // kFailedOther: it failed otherwise (fatal_error).
  static constexpr int kFailedOther = -2;
  void close_gate() { gate_.store(false, std::memory_order_relaxed); }
  // Spins, at most `spins` loads, until the round counter the last poll
  // waited for reaches the value it needs; true when it did so meanwhile
  // (poll again at once). False when it did not, and when there is
  // nothing to spin on: no hint, or one met already (an older wait, or
  // one that is not for a line, such as a closed gate), where the caller's
  // usual policy (progress, which a gate may wait for) applies.
  bool spin_on_wait(unsigned spins) const
  {
    const std::atomic<uint64_t>* seq =
        wait_seq_.load(std::memory_order_relaxed);
    if (!seq) return false;
    const uint64_t want = wait_value_.load(std::memory_order_relaxed);
    if (seq->load(std::memory_order_relaxed) >= want) return false;
    for (unsigned i = 0; i < spins; ++i)
      if (seq->load(std::memory_order_relaxed) >= want) return true;
    return false;
  }
  void open_gate(int failed_rank)
  {
    fail_rank_ = failed_rank;
    gate_.store(true, std::memory_order_release);
  }

 private:
  friend class shm_team_t;
  shm_request_t req_;
  size_t chunk_ = 0;  // bytes (broadcast, allgather, alltoall block) or
                      // items (reductions) per round
  uint64_t nrounds_ = 1;
  // a reduction split into shares: each chunk takes two rounds, the first
  // reduces this rank's share of every rank's input into its other slot,
  // the second copies every rank's reduced share out
  bool split_ = false;
  // each rank's part of the round fits its control line (one round)
  bool inline_ = false;
  // it fits a ring buffer (one round): see kRoundLines in shm_team.cpp
  bool ring_ = false;
  // the bytes this rank writes into its ring buffer in such a round,
  // whose next buffer it prefetches for writing (0: none, as a
  // broadcast's reader or a reduce's root, or too large to prefetch)
  size_t ring_part_ = 0;
  // single copy: in round 0 each rank whose data others need publishes
  // its buffer's address and the readers copy from it by cross-memory
  // attach; in round 1 an owner waits until its readers are done with it
  bool cma_ = false;
  // the owners whose blocks an allgather or alltoall has read in its single
  // copy's round 0 so far (bit j for rank j; this rank's bit: its own block
  // is in place)
  uint64_t got_ = 0;
  // a reduce or allreduce through the slots with its ranks paired
  // (shm_team_t::pairs_): the rank whose input this one reduces into its
  // own before it writes its part (-1: none), and the ranks whose input is
  // in such a pair's part (bit j for rank j), which the readers (a
  // reduce's root, an allreduce's every rank) then skip
  int child_ = -1;
  uint64_t merged_ = 0;
  // a reduce's root reads its own input from the caller's buffer and
  // writes no slot (nobody else reads it); a reduce_scatter's rank does so
  // for its own block, the only one of its input nobody else reads
  bool own_direct_ = false;
  uint64_t round_ = 0;    // rounds done
  bool written_ = false;  // this round's input is in the slot
  int waiting_ = 0;       // the first rank not seen in this round yet
  uint64_t seen_ = 0;     // the round every rank seen so far has published
  // the ranks whose line this rank reads in a (one-round-kind) round: bit
  // j for rank j (at most 64 ranks); all_ = every other rank
  uint64_t needs_ = 0;
  bool all_ = false;
  // what the last poll found missing: the round counter of the rank it
  // waits for and the value it needs there. A blocking caller spins on it
  // (a plain load that hits its cache until the line changes) between
  // polls, which check everything else (failures, stops).
  std::atomic<const std::atomic<uint64_t>*> wait_seq_{nullptr};
  std::atomic<uint64_t> wait_value_{0};
  std::vector<char> snapshot_;  // the input, when the output overlaps it
  std::atomic<bool> gate_{true};
  int fail_rank_ = -1;
};

class shm_team_t final : public team_base_t
{
 public:
  // open_node_team (core/coll_support.hpp): every rank of the runtime
  // calls it at runtime allocation (it runs two bootstrap allgathers);
  // returns null on every rank unless all of them opened the segment.
  // `node_local`: every rank runs on this node (the same answer everywhere).
  // `nodes`: every rank's node id; one node: the flat team; several: the
  // hierarchical one (a segment per node of two ranks or more).
  static std::unique_ptr<shm_team_t> open(
      bootstrap::backend_t& boot, int rank_me, int rank_n,
      const std::vector<std::string>& nodes);
  ~shm_team_t();
  shm_team_t(const shm_team_t&) = delete;
  shm_team_t& operator=(const shm_team_t&) = delete;

  // Whether the team runs this collective (size limits, item sizes); the
  // answer depends only on arguments every rank passes alike.
  bool accepts(const shm_request_t& req) const;
  // Queues the collective (after the ones started before it). A team that
  // failed (a peer died, ranks disagreed) finishes it at once with that
  // error. `drive`: when nothing runs before it, it also goes as far as it
  // can at once (as poll would; it may have finished when start returns,
  // and what poll throws, start may throw).
  void start(shm_op_t* op, const shm_request_t& req, bool drive = false);
  // Runs the queued collectives as far as they can go without waiting;
  // returns true when the queue is empty. One thread at a time (others
  // return false at once). `failed(ctx, rank)`: whether a rank is known to
  // have failed.
  bool poll() override;
  // How run_small went: it ended (its result is in place), it declined
  // (nothing happened: start the collective as usual), or it published
  // this rank's round and handed the rest to the op it made, which is now
  // the team's current collective (poll until it finished).
  enum class small_t { done, declined, handed_over };
  // A blocking collective of one small round (every rank's part fits the
  // control line) run straight from the caller when nothing is queued or
  // running: the round of advance without the op, the queue and the poll
  // loop, so a reader that finds its peers there pays little more than
  // its line transfers. With more ranks than cores it waits for a peer
  // by giving the core away between looks (small_yield), for a bounded
  // time. Anything but the usual case (a line still in use,
  // a peer not there after a short spin or that bounded wait, a
  // description that differs)
  // goes to the general path, which reports errors and waits with every
  // check: before this rank publishes, it declines; after, it makes the
  // op (`make(ctx)`, only then) in the state advance leaves after its
  // write and hands over.
  small_t run_small(const shm_request_t& req, shm_op_t* (*make)(void*),
                    void* ctx);
  void set_failure_check(bool (*failed)(void*, int), void* ctx)
  {
    failed_ = failed;
    failed_ctx_ = ctx;
  }

  // the ranks span several nodes: barrier, broadcast, reduce and
  // allreduce run hierarchically, the other collectives point to point
  bool hierarchical() const { return leaders_.size() > 1; }
  // this node's ranks (runtime ranks, ascending; the first is the node's
  // leader) and this rank's index among them
  const std::vector<int>& members() const { return members_; }
  int local_rank() const { return rank_me_; }
  // the node (0..) of a runtime rank, and each node's leader
  int node_of(int rank) const { return node_of_[static_cast<size_t>(rank)]; }
  const std::vector<int>& leaders() const { return leaders_; }
  // this node has more ranks than cores online: a rank that waits for
  // another gives its core away at once, or the one it waits for may not
  // run until the waiter's time slice ends
  bool oversubscribed() const { return oversubscribed_; }
  // collectives of at least this many bytes per reader and peer copy
  // once, by cross-memory attach (SIZE_MAX: never)
  size_t single_copy_bytes() const { return cma_ ? cma_bytes_ : SIZE_MAX; }
  // hierarchical collectives this rank ran (introspection for tests)
  uint64_t hierarchical_runs() const
  {
    return hier_runs_.load(std::memory_order_relaxed);
  }
  // collectives this rank ran through run_small, finished there or handed
  // over after it published (introspection for tests; the calling
  // thread's view)
  uint64_t small_runs() const { return small_runs_; }
  // those of them handed over to the general path (same view)
  uint64_t small_handovers() const { return small_handovers_; }
  // reduces and allreduces this rank ran with its ranks paired
  // (introspection for tests; the starting thread's view)
  uint64_t paired_runs() const
  {
    return paired_runs_.load(std::memory_order_relaxed);
  }
  // control lines per rank: the most small rounds a rank that needs nobody
  // runs ahead of the others, plus one (for tests)
  static uint64_t round_lines();
  void count_hierarchical()
  {
    hier_runs_.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  struct line_t;
  struct stop_t;
  shm_team_t(int rank_me, int rank_n, void* base, size_t bytes,
             size_t slot_bytes, size_t split_bytes);
  // a node of one rank: the stage is a local copy
  void run_alone(shm_op_t& op);
  // rank r's control line of round epoch's parity, and its stop line
  line_t* line(int r, uint64_t epoch) const;
  stop_t* stop(int r) const;
  char* slot(int r, uint64_t epoch) const;
  // rank r's ring buffer of round epoch (see shm_op_t::ring_)
  char* ring(int r, uint64_t epoch) const;
  // where rank r's data of round epoch of op is: its line, its ring buffer
  // or its slot
  char* data(const shm_op_t& op, int r, uint64_t epoch) const;
  // poll with polling_ held (released on return): 1 the queue is empty,
  // 0 the current collective waits, -1 one ended (poll again for more).
  // `counted`: current_ is in npending_ (start's direct drive: not yet)
  int poll_held(bool counted);
  // one step of the head collective: true when it ended
  bool advance(shm_op_t& op, shm_result_t* result);
  // whether this rank reads rank j's slot (or must see j arrive) in a
  // round of op
  bool needs(const shm_op_t& op, int j) const;
  // whether it needs every rank in this round of op
  bool needs_all(const shm_op_t& op) const;
  // an allgather in a ring buffer (one round, its whole input): this
  // rank's block goes to its output right after the write (advance)
  bool own_block_early(const shm_op_t& op) const;
  // op's needs_ and all_ (from its request)
  void set_needs(shm_op_t& op) const;
  // a paired reduce's child_ and merged_, and the needs_ they change
  void set_pairs(shm_op_t& op);
  // the first chunk unit of op's current round
  size_t chunk_offset(const shm_op_t& op) const;
  // a split reduction's round (shm_op_t::split_)
  void read_share(shm_op_t& op, uint64_t epoch, size_t off);
  // whether every rank (all) or every rank this one needs published round
  // e: 1 yes, 0 not yet, -1 one of them failed (*result says which)
  int wait_for(shm_op_t& op, uint64_t e, bool all, shm_result_t* result);
  // wait_for's case of a rank that has not published the round yet
  int missing(shm_op_t& op, int j, uint64_t e, shm_result_t* result);
  void write_phase(shm_op_t& op, char* mine);
  // run_small's parts: whether every rank is known to have published
  // round `need` (checking their lines as wait_for would, without
  // waiting), its copy into the line, its read of the round e, and the
  // hand-over to the general path
  bool small_free(uint64_t need);
  void small_write(const shm_request_t& req, char* mine) const;
  void small_read(const shm_request_t& req, uint64_t e) const;
  void small_hand_over(shm_op_t& op, const shm_request_t& req);
  // run_small's wait with more ranks than cores: gives the core away once
  // and returns true, or false once the wait has lasted its bound
  // (`*until`: the epoch before the first call, then the bound's end)
  bool small_yield(std::chrono::steady_clock::time_point* until);
  void read_phase(shm_op_t& op, uint64_t epoch);
  // the single-copy form (shm_op_t::cma_): whether the team runs op so,
  // its read phase, and one read of rank j's memory (false: *result says
  // why it failed)
  bool use_cma(const shm_request_t& req) const;
  bool read_cma(shm_op_t& op, uint64_t epoch, shm_result_t* result);
  // an allgather's or alltoall's single copy before every owner arrived:
  // reads the blocks of the owners that published round epoch (false: it
  // ended, *result says why)
  bool read_arrived(shm_op_t& op, uint64_t epoch, shm_result_t* result);
  // one owner's block of an allgather or alltoall, or this rank's own
  bool read_block(shm_op_t& op, int j, uint64_t epoch, shm_result_t* result);
  bool reduce_cma(shm_op_t& op, uint64_t epoch, shm_result_t* result);
  bool cma_read(shm_op_t& op, int j, void* dst, uint64_t remote, size_t len,
                shm_result_t* result);

  int rank_me_, rank_n_;  // within this node
  std::vector<int> members_;
  std::vector<int> node_of_;
  std::vector<int> leaders_;
  std::atomic<uint64_t> hier_runs_{0};
  bool oversubscribed_ = false;
  void* base_;  // null for a node of one rank
  size_t bytes_;
  size_t slot_bytes_;
  size_t ring_bytes_;  // a ring buffer: 1/kRoundLines of a slot
  // reduce and allreduce of at least this many bytes split the reduction
  // into per-rank shares (at 3 ranks and more)
  size_t split_bytes_;
  // every rank may read every other's memory by cross-memory attach
  // (process_vm_readv; probed at open, the same answer on every rank):
  // broadcast, allgather and alltoall whose copy per reader and peer is at
  // least cma_bytes_, at any size, and reduce from cma_bytes_ to one piece
  // (kCmaPiece; unless split), read the owner's buffer directly (one copy
  // instead of two through a slot; a reduce's root reduces from what it
  // read)
  bool cma_ = false;
  size_t cma_bytes_ = SIZE_MAX;
  // broadcast and reduce copy once too (their node has at most as many
  // ranks as cores). With more ranks than cores they keep the slots: the
  // single copy makes the ranks that the slots let return at once (the
  // root of a broadcast, the other ranks of a reduce) wait until the
  // readers read, each reader needing a time slice
  bool cma_rooted_ = true;
  // a reduce or allreduce through the slots pairs neighbouring ranks
  // other than a reduce's root (its node has more ranks than cores): the
  // first of each pair reduces the pair's inputs into its slot, beside the
  // root's own reduction on the other core, and the root (allreduce: every
  // rank) reduces one part per pair instead of two, so the work that
  // nobody else can take over shrinks
  bool pairs_ = false;
  std::atomic<uint64_t> paired_runs_{0};
  std::vector<int> pids_;  // this node's ranks' process ids
  // a single-copy reduce's pieces (only the thread that holds polling_)
  std::vector<char> scratch_;
  uint64_t epoch_ = 0;            // rounds this rank completed
  uint64_t small_runs_ = 0;       // (under polling_)
  uint64_t small_handovers_ = 0;  // (under polling_)
  // every rank is known to have published this round (a round that
  // needed every rank saw them all): the next round's check of the
  // previous one then reads no other rank's line
  uint64_t all_seen_ = 0;
  bool (*failed_)(void*, int) = nullptr;
  void* failed_ctx_ = nullptr;
  // the collective being run (only by the thread that holds polling_)
  shm_op_t* current_ = nullptr;
  // the collectives started after it, oldest first, and the error that
  // stopped the team (errorcode done while it works); under queue_mu_
  std::mutex queue_mu_;
  std::deque<shm_op_t*> queue_;
  shm_result_t broken_;
  std::atomic_flag polling_ = ATOMIC_FLAG_INIT;
};

}  // namespace lci::coll

#endif  // LCI_COLL_SHM_TEAM_HPP
