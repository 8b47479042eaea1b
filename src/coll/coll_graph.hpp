// The collectives' shared part (docs/COLLECTIVES.md): `coll_t`, one
// collective under construction, and the building blocks several
// collectives share. Each collective has its own file (barrier.cpp,
// broadcast.cpp, reduce.cpp, allreduce.cpp, reduce_scatter.cpp,
// allgather.cpp, alltoall.cpp) whose call_impl checks the arguments, offers
// the call to the node-local team (coll/shm_team.hpp) and otherwise builds
// a point-to-point algorithm.
//
// A point-to-point algorithm is one completion graph per call whose nodes
// are public posts (post_send / post_recv with allow_retry(false), so a
// node never has to be retried: what the network cannot take goes to the
// backlog), local copies and reductions. The graph's completion frees it
// and signals the caller's completion object; a blocking call waits for
// that signal while driving progress on its device. What the collectives
// need beyond the public API comes through core/coll_support.hpp.
//
// Sizes travel with the messages: a receive that gets fewer bytes than the
// collective expects raises fatal_error naming the collective, the peer and
// both sizes (more bytes than expected are refused by the receive itself),
// so ranks that disagree on sizes or counts get an error, never a write
// past a buffer.
//
// A known failed rank (a failed step, or one the runtime knows of) stops
// the collective's later posts: a rank that lost a contribution never
// forwards what it holds instead, so a rank that hears of the failed rank
// only through others waits until the core's peer-failure sweep withdraws
// its collective receives (see core/coll_support.hpp) and ends with the
// error too, never with a result that lacks a rank's part.
#ifndef LCI_COLL_COLL_GRAPH_HPP
#define LCI_COLL_COLL_GRAPH_HPP

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

#include "coll/shm_team.hpp"
#include "core/coll_support.hpp"
#include "lci.hpp"
#include "resource/endpoint.hpp"
#include "util/error.hpp"

namespace lci::coll
{

// steps of the phases of composite algorithms
constexpr uint64_t kStepLast = 63;        // recursive doubling's result
constexpr uint64_t kStepScatter = 64;     // reduce_scatter tree's scatter
constexpr size_t kRingChunk = 256 << 10;  // broadcast ring's pipeline unit

inline int mod(int a, int n) { return ((a % n) + n) % n; }

// [a, a + an) and [b, b + bn) share a byte
inline bool overlaps(const void* a, size_t an, const void* b, size_t bn)
{
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return an && bn && x < y + bn && y < x + an;
}

// the block of count items that block b of n is: items [off, off + len)
struct block_t {
  size_t off;
  size_t len;
};
inline block_t block_of(size_t count, int n, int b)
{
  size_t base = count / n, extra = count % n;
  size_t ub = static_cast<size_t>(b);
  return block_t{ub * base + std::min(ub, extra), base + (ub < extra ? 1 : 0)};
}

// The result of a collective on one rank: the input copied to the output
// (nothing for barrier and broadcast).
inline void one_rank(const shm_request_t& r)
{
  size_t bytes = 0;
  switch (r.kind) {
    case shm_kind_t::barrier:
    case shm_kind_t::broadcast:
      return;
    case shm_kind_t::reduce:
    case shm_kind_t::allreduce:
    case shm_kind_t::reduce_scatter:
      bytes = r.count * r.item_size;
      break;
    case shm_kind_t::allgather:
    case shm_kind_t::alltoall:
      bytes = r.size;
      break;
  }
  if (bytes && r.in != r.out) std::memmove(r.out, r.in, bytes);
}

struct finisher_t;
struct state_t;
struct hier_t;

// A node-local collective that a blocking caller waits for.
struct shm_wait_op_t final : shm_op_t {
  std::atomic<bool> done{false};
  shm_result_t result;
  void finish(const shm_result_t& r) override
  {
    result = r;
    done.store(true, std::memory_order_release);
  }
};

// A blocking node-local collective's wait, on the caller's stack: made only
// when the small round's direct run does not finish the call
// (uninitialized storage until then: the usual call writes none of it).
struct lazy_wait_t {
  alignas(shm_wait_op_t) unsigned char bytes[sizeof(shm_wait_op_t)];
  shm_wait_op_t* op = nullptr;
  lazy_wait_t() = default;
  lazy_wait_t(const lazy_wait_t&) = delete;
  lazy_wait_t& operator=(const lazy_wait_t&) = delete;
  ~lazy_wait_t()
  {
    if (op) op->~shm_wait_op_t();
  }
  static shm_op_t* make(void* self)
  {
    auto* w = static_cast<lazy_wait_t*>(self);
    w->op = new (w->bytes) shm_wait_op_t();
    return w->op;
  }
};

// The completion semantic of a barrier or alltoall: either value gives the
// same completion (every rank's part is in place); anything else is refused.
inline void check_comp_semantic(comp_semantic_t semantic, const char* call)
{
  if (semantic != comp_semantic_t::memory &&
      semantic != comp_semantic_t::network)
    util::throw_fatal(call, ": comp_semantic ", static_cast<int>(semantic),
                      " is not a value of comp_semantic_t");
}

// One collective under construction: the graph and the helpers that add
// point-to-point, copy and reduction nodes to it.
class coll_t
{
 public:
  // Throws fatal_error naming `call` for COMP_NULL_RETRY and for
  // resources begin_call refuses.
  // `endpoint` (upstream LCI 2's): run on its device (the device given,
  // if any, must be that one).
  coll_t(const char* call, shm_kind_t kind, runtime_t runtime, device_t device,
         matching_engine_t me, comp_t comp, void* user_context,
         endpoint_t endpoint)
      : name_(call),
        kind_(kind),
        call_(start_call(call, runtime, device, me, comp, endpoint)),
        comp_(comp),
        user_context_(user_context)
  {
    rank = call_.rank;
    nranks = call_.nranks;
  }
  ~coll_t()
  {
    // not started (an argument was refused while building)
    if (!graph_.is_empty()) destroy();
  }
  coll_t(const coll_t&) = delete;
  coll_t& operator=(const coll_t&) = delete;

  int rank = 0;
  int nranks = 1;

  // argument checks, each throwing fatal_error naming the call
  // an algorithm option outside its enum (checked at every rank count,
  // not only where the algorithm matters)
  void check_algorithm(int value, int max) const
  {
    if (value < 0 || value > max)
      util::throw_fatal(name_, ": unknown algorithm ", value);
  }
  void check_root(int root) const
  {
    if (root < 0 || root >= nranks)
      util::throw_fatal(name_, ": root ", root, " is not a rank (0..",
                        nranks - 1, ")");
  }
  void check_buffer(const void* buf, size_t size, const char* name) const
  {
    if (!buf && size)
      util::throw_fatal(name_, ": ", name, " is null but ", size,
                        " bytes are to be accessed");
  }
  // count items of item_size bytes (times `blocks`) fit a buffer; returns
  // the bytes of count items
  size_t check_items(size_t count, size_t item_size, size_t blocks,
                     reduce_op_t op) const
  {
    if (count && item_size == 0)
      util::throw_fatal(name_, ": item_size is 0 with count ", count);
    if (!op) util::throw_fatal(name_, ": null reduction operator");
    // count * item_size * blocks (0 counted as 1) above the limit, by
    // multiplication: a division would cost more than the rest of a small
    // collective's checks
    const size_t limit = size_t(1) << 48;
    size_t total = 0;
    if (item_size > limit ||
        __builtin_mul_overflow(count, std::max<size_t>(item_size, 1), &total) ||
        __builtin_mul_overflow(total, std::max<size_t>(blocks, 1), &total) ||
        total > limit)
      util::throw_fatal(name_, ": ", count, " items of ", item_size,
                        " bytes is larger than any buffer");
    return count * item_size;
  }
  void check_size(size_t size, size_t blocks) const
  {
    if (size > (size_t(1) << 48) / std::max<size_t>(blocks, 1))
      util::throw_fatal(name_, ": size ", size,
                        " is negative or larger than any buffer");
  }

  // scratch memory that lives as long as the collective
  char* scratch(size_t size);
  // peer: a rank of the runtime, or the index among the representatives
  // after begin_hier
  graph_node_t send(int peer, const void* buf, size_t size, uint64_t step);
  graph_node_t recv(int peer, void* buf, size_t size, uint64_t step);
  // a copy of size bytes (memmove: the ranges may be equal)
  graph_node_t copy(const void* src, void* dst, size_t size);
  // dst = srcs[0] op srcs[1] op ... (in this order); dst may alias any
  // source (see reduce_node_t)
  graph_node_t reduce(reduce_op_t op, void* dst, size_t count, size_t bytes,
                      std::vector<const void*> srcs);
  // A copy of `size` bytes of `buf`, for an input that the collective's
  // own receives may overwrite. Returns the copy; *node is the copy's
  // node: the caller makes every node that writes `buf`'s bytes, or reads
  // the copy, follow it.
  const void* snapshot(const void* buf, size_t size, graph_node_t* node);
  // a node that completes when its predecessors have
  graph_node_t join() { return graph_add_node_x(graph(), nullptr)(); }
  // b runs after a (no edge when a is null: b depends on nothing more)
  void edge(graph_node_t a, graph_node_t b)
  {
    if (a && b) graph_add_edge(graph(), a, b);
  }

  // this call's request for run_local
  shm_request_t request(const void* in, void* out) const
  {
    shm_request_t r;
    r.kind = kind_;
    r.call = name_;
    r.in = in;
    r.out = out;
    return r;
  }
  shm_request_t reduction(const void* in, void* out, size_t count,
                          size_t item_size, reduce_op_t op) const
  {
    shm_request_t r = request(in, out);
    r.count = count;
    r.item_size = item_size;
    r.op = op;
    return r;
  }

  // Runs the collective without a graph when it can: on one rank (a local
  // copy), or through the node-local team when the caller left the
  // algorithm to the library and the team takes the request. Returns
  // false when the point-to-point algorithms must run it. `buffer`/`size`
  // go to the completion status.
  //
  // A blocking call runs the team's small round from here (the common
  // small collective: no further frame, and no status, which only a
  // completion object receives); what it leaves unfinished, wait_team
  // waits for.
  bool run_local(const shm_request_t& req, bool default_algorithm, void* buffer,
                 size_t size)
  {
    if (nranks == 1) {
      one_rank(req);
      if (!comp_.is_empty()) comp_.p_impl->signal(status(buffer, size));
      return true;
    }
    if (!call_.team || team()->hierarchical() || !default_algorithm ||
        !team()->accepts(req))
      return false;
    if (!comp_.is_empty()) {
      start_team(req, status(buffer, size));
      return true;
    }
    lazy_wait_t wait;
    const shm_team_t::small_t small =
        team()->run_small(req, &lazy_wait_t::make, &wait);
    if (small != shm_team_t::small_t::done) wait_team(req, small, wait);
    return true;
  }
  // Starts the graph built so far; returns once it completed unless the
  // caller gave a completion object. `buffer`/`size` go to the completion
  // status.
  void run(void* buffer, size_t size);

  // The hierarchical form (ranks on several nodes, shm_team.hpp): the
  // team when this call runs it (the team is hierarchical and the caller
  // left the algorithm to the library), else null.
  shm_team_t* hier_team(bool default_algorithm) const
  {
    shm_team_t* t = call_.team ? team() : nullptr;
    return t && t->hierarchical() && default_algorithm ? t : nullptr;
  }
  // Queues the node-local stages: `before` (to this node's representative)
  // and `after` (from it); either may be null. `reps`: the representative
  // of every node (runtime ranks, in node order) when this rank is its
  // node's, else null: the point-to-point algorithm the caller then builds
  // runs among them (rank = this rank's index in reps, nranks = their
  // number), after `before` and before `after`, in which the
  // representative waits for it.
  void begin_hier(const shm_request_t* before, const shm_request_t* after,
                  const std::vector<int>* reps);
  // Runs what begin_hier queued and the graph built since; returns once
  // all of it ended unless the caller gave a completion object.
  void run_hier(void* buffer, size_t size);

 private:
  // the only team there is (core/coll_support.hpp's view of it)
  shm_team_t* team() const { return static_cast<shm_team_t*>(call_.team); }
  tag_t tag(uint64_t step) const
  {
    return coll_tag(call_.seq, static_cast<uint64_t>(kind_), step);
  }
  // the graph, made at the first node
  comp_t graph()
  {
    if (graph_.is_empty()) make_graph();
    return graph_;
  }
  void make_graph();
  // Checks what begin_call does not (the completion object, the endpoint)
  // and resolves the call's resources.
  static call_t start_call(const char* call, runtime_t runtime, device_t device,
                           matching_engine_t me, comp_t comp,
                           endpoint_t endpoint)
  {
    if (comp == COMP_NULL_RETRY)
      util::throw_fatal(call,
                        ": COMP_NULL_RETRY is not a completion object for a "
                        "collective (pass COMP_NULL to block, or a "
                        "completion object)");
    if (!endpoint.is_empty()) device = endpoint_device(endpoint, device, call);
    return begin_call(call, runtime, device, me);
  }
  // the status a completion object receives
  status_t status(void* buffer, size_t size) const
  {
    status_t s(errorcode_t::done);
    s.rank = rank;
    s.buffer = buffer;
    s.size = size;
    s.user_context = user_context_;
    return s;
  }
  // run_local through the node-local team: a nonblocking call queues it;
  // a blocking one waits for what run_small left (`small`: declined, or
  // handed over to the op made in `wait`)
  void start_team(const shm_request_t& req, const status_t& status);
  void wait_team(const shm_request_t& req, shm_team_t::small_t small,
                 lazy_wait_t& wait);
  void destroy();

  const char* name_;
  shm_kind_t kind_;
  call_t call_;
  comp_t comp_;
  void* user_context_ = nullptr;
  comp_t graph_;
  finisher_t* fin_ = nullptr;
  state_t* state_ = nullptr;
  graph_node_t state_node_ = nullptr;
  // begin_hier: the runtime rank of each index, and the collective
  std::vector<int> peers_;
  hier_t* hier_ = nullptr;
  int peer(int index) const
  {
    return peers_.empty() ? index : peers_[static_cast<size_t>(index)];
  }
};

// ---- building blocks ------------------------------------------------------
// Each adds its nodes to c's graph, every node after `after` (null: no
// dependency), and returns a node that completes when its part is done.

// Binomial reduction of count items (bytes in all) to root into acc (root:
// recvbuf; others: scratch), steps 0..31.
graph_node_t reduce_tree(coll_t& c, const void* sendbuf, void* acc,
                         size_t count, size_t bytes, reduce_op_t op, int root,
                         graph_node_t after);

// Ring reduce-scatter of acc's n blocks of count items (block_of), steps
// base..base + n - 2: at the end a rank holds the whole reduction of block
// (rank + 1 + shift).
graph_node_t ring_reduce_scatter(coll_t& c, char* acc, size_t count,
                                 size_t item_size, reduce_op_t op, int shift,
                                 uint64_t base, graph_node_t after);

// Ring allgather of buf's n blocks of count items (block_of), steps
// base..base + n - 2: a rank owns block (rank + shift) and forwards what it
// receives.
graph_node_t ring_allgather(coll_t& c, char* buf, size_t count,
                            size_t item_size, int shift, uint64_t base,
                            graph_node_t after);

}  // namespace lci::coll

#endif  // LCI_COLL_COLL_GRAPH_HPP
