// Collectives (docs/COLLECTIVES.md): barrier, broadcast, reduce, allreduce,
// reduce_scatter, allgather and alltoall, built like any user would build
// them: each call turns into one completion graph whose nodes are public
// point-to-point posts (post_send / post_recv with allow_retry(false), so a
// node never has to be retried: what the network cannot take goes to the
// backlog), local copies and reductions. The graph's completion frees it and
// signals the caller's completion object; a blocking call waits for that
// signal while driving progress on its device.
//
// Matching: every collective runs on a matching engine (by default the
// runtime's collective engine, allocated right after the default engine so
// that its index agrees on every rank) and never matches user messages.
// Its messages carry the tag
//     seq << 24 | kind << 20 | step
// where seq counts the collectives posted on the engine (so every rank must
// call the collectives of one engine in the same order), kind names the
// collective (a rank that calls another collective never matches) and step
// numbers the messages between one pair of ranks within the collective.
//
// Sizes travel with the messages: a receive that gets fewer bytes than the
// collective expects raises fatal_error naming the collective, the peer and
// both sizes (more bytes than expected are refused by the receive itself),
// so ranks that disagree on sizes or counts get an error, never a write
// past a buffer.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "coll/shm_team.hpp"
#include "lci.hpp"
#include "resource/matching_engine.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{
namespace
{

using kind_t = coll::shm_kind_t;
using coll::kind_name;

constexpr int kStepBits = 20;
constexpr int kKindBits = 4;
constexpr uint64_t kStepMask = (uint64_t(1) << kStepBits) - 1;
constexpr uint64_t kKindMask = (uint64_t(1) << kKindBits) - 1;
// steps of the phases of composite algorithms
constexpr uint64_t kStepLast = 63;        // recursive doubling's result
constexpr uint64_t kStepScatter = 64;     // reduce_scatter tree's scatter
constexpr size_t kRingChunk = 256 << 10;  // broadcast ring's pipeline unit
// polls of the node-local team before a blocking call also drives progress
constexpr unsigned kAlonePolls = 128;

int mod(int a, int n) { return ((a % n) + n) % n; }

// a node that copies size bytes (memmove: the ranges may be equal)
struct copy_node_t {
  const void* src;
  void* dst;
  size_t size;
  static status_t run(void* v)
  {
    auto* c = static_cast<copy_node_t*>(v);
    if (c->size && c->src != c->dst) std::memmove(c->dst, c->src, c->size);
    return status_t(errorcode_t::done);
  }
};

// dst = srcs[0] op srcs[1] op ... (in this order). The operator may write
// dst while it reads its left or right operand at the same index, so dst
// may be srcs[0] or srcs[1]; when it overlaps any other source (an
// in-place caller's block, say), `tmp` (allocated by coll_t::reduce) holds
// the result until every source has been read.
struct reduce_node_t {
  reduce_op_t op;
  void* dst;
  size_t count;
  size_t bytes;
  std::vector<const void*> srcs;
  void* tmp;
  static status_t run(void* v)
  {
    auto* r = static_cast<reduce_node_t*>(v);
    if (r->count == 0) return status_t(errorcode_t::done);
    if (r->srcs.size() == 1) {
      if (r->srcs[0] != r->dst) std::memmove(r->dst, r->srcs[0], r->bytes);
      return status_t(errorcode_t::done);
    }
    void* out = r->tmp ? r->tmp : r->dst;
    r->op(r->srcs[0], r->srcs[1], out, r->count);
    for (size_t i = 2; i < r->srcs.size(); ++i)
      r->op(out, r->srcs[i], out, r->count);
    if (r->tmp) std::memcpy(r->dst, r->tmp, r->bytes);
    return status_t(errorcode_t::done);
  }
};

// [a, a + an) and [b, b + bn) share a byte
bool overlaps(const void* a, size_t an, const void* b, size_t bn)
{
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return an && bn && x < y + bn && y < x + an;
}

template <typename T>
void delete_value(void* v)
{
  delete static_cast<T*>(v);
}

// Scratch buffers of 64 KiB and more are kept for the next collectives, by
// power-of-two size class, up to kCacheBytes in all: a fresh buffer each
// call comes from the heap top or mmap, and the network's copy into it then
// takes one page fault per 4 KiB (on a VM, ~10 us each: a 1 MiB receive
// into fresh memory ran at 300 MB/s).
class scratch_cache_t
{
 public:
  static constexpr size_t kMinCached = size_t(64) << 10;
  static constexpr size_t kCacheBytes = size_t(64) << 20;

  static scratch_cache_t& get()
  {
    static scratch_cache_t* cache = new scratch_cache_t();  // never freed:
    return *cache;  // collectives may complete during static destruction
  }
  // a buffer of at least `size` bytes and its capacity
  char* take(size_t size, size_t* capacity)
  {
    if (size < kMinCached) {
      *capacity = size;
      return new char[std::max<size_t>(size, 1)];
    }
    int cls = size_class(size);
    *capacity = size_t(1) << cls;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::vector<char*>& list = free_[cls];
      if (!list.empty()) {
        char* p = list.back();
        list.pop_back();
        cached_ -= *capacity;
        return p;
      }
    }
    return new char[*capacity];
  }
  void give(char* p, size_t capacity)
  {
    if (capacity >= kMinCached) {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_ + capacity <= kCacheBytes) {
        free_[size_class(capacity)].push_back(p);
        cached_ += capacity;
        return;
      }
    }
    delete[] p;
  }

 private:
  static int size_class(size_t size)
  {
    int cls = 0;
    while ((size_t(1) << cls) < size) ++cls;
    return cls;
  }
  std::mutex mu_;
  std::vector<char*> free_[64];
  size_t cached_ = 0;
};

// What a collective owns besides its graph's nodes: scratch buffers, and
// the first error its receives found.
struct state_t {
  std::vector<std::pair<char*, size_t>> scratch;  // buffer, capacity
  std::mutex mu;
  std::string error;
  // when `error` is a failed step: its status (errorcode, peer)
  status_t failed{errorcode_t::done};
  ~state_t()
  {
    for (auto& b : scratch) scratch_cache_t::get().give(b.first, b.second);
  }
};

void record_error(void* dst_value, const std::string& error,
                  const status_t* failed = nullptr)
{
  auto* state = static_cast<state_t*>(dst_value);
  std::lock_guard<std::mutex> lock(state->mu);
  if (!state->error.empty()) return;
  state->error = error;
  if (failed) state->failed = *failed;
}

// A step of a collective that completed with an error (a failed peer):
// the first such error, naming the collective, the step and the peer.
std::string step_failed(const char* what, int peer, tag_t tag,
                        const status_t& status)
{
  std::ostringstream os;
  os << "lci::" << kind_name((tag >> kStepBits) & kKindMask) << ": the " << what
     << " rank " << peer << " in step " << (tag & kStepMask)
     << " failed: " << status.error.get_str();
  return os.str();
}

// A receive of a collective that failed, or got fewer bytes than
// expected: recorded, and raised once the collective completed (its graph
// can then be freed).
void check_recv_size(status_t status, void* src_value, void* dst_value)
{
  auto* op = static_cast<post_recv_x*>(src_value);
  if (status.error.is_fatal()) {
    status.rank = op->rank_;
    record_error(dst_value,
                 step_failed("receive from", op->rank_, op->tag_, status),
                 &status);
    return;
  }
  if (status.size == op->size_) return;
  std::ostringstream os;
  os << "lci::" << kind_name((op->tag_ >> kStepBits) & kKindMask) << ": rank "
     << status.rank << " sent " << status.size << " bytes in step "
     << (op->tag_ & kStepMask) << " where " << op->size_
     << " were expected (do all ranks pass the same sizes, counts and "
        "root?)";
  record_error(dst_value, os.str());
}

// A send of a collective that failed: recorded the same way.
void check_send(status_t status, void* src_value, void* dst_value)
{
  if (!status.error.is_fatal()) return;
  auto* op = static_cast<post_send_x*>(src_value);
  status.rank = op->rank_;
  record_error(dst_value, step_failed("send to", op->rank_, op->tag_, status),
               &status);
}

// What a blocking caller waits for (shared: a caller that left on an
// exception does not own it alone).
struct wait_t {
  std::atomic<bool> done{false};
  std::string error;
  status_t failed{errorcode_t::done};
};

// Completion of a collective's graph: frees the graph (and with it the
// collective's buffers and node values), then signals the caller's
// completion object, or wakes the blocking caller. An error goes to the
// blocking caller. A nonblocking collective whose step failed (a failed
// peer) signals its completion object with that step's status (error, rank);
// one whose receive got the wrong size raises it here, from the progress
// call that completed the collective, and does not signal.
struct finisher_t final : comp_impl_t {
  comp_t graph;
  state_t* state = nullptr;
  comp_t comp;
  status_t status;
  std::shared_ptr<wait_t> wait;
  void signal(status_t) override
  {
    std::string error = std::move(state->error);
    status_t failed = state->failed;
    comp_t g = graph;
    free_comp(&g);
    comp_t c = comp;
    status_t s = status;
    std::shared_ptr<wait_t> w = std::move(wait);
    delete this;
    if (w) {
      w->error = std::move(error);
      w->failed = failed;
      w->done.store(true, std::memory_order_release);
    } else if (failed.error.is_fatal()) {
      s.error = failed.error;
      s.rank = failed.rank;
      c.p_impl->signal(s);
    } else if (!error.empty()) {
      throw fatal_error(error);
    } else {
      c.p_impl->signal(s);
    }
  }
};

// A node-local collective that a blocking caller waits for.
struct shm_wait_op_t final : coll::shm_op_t {
  std::atomic<bool> done{false};
  coll::shm_result_t result;
  void finish(const coll::shm_result_t& r) override
  {
    result = r;
    done.store(true, std::memory_order_release);
  }
};

// A nonblocking node-local collective: signals the caller's completion
// object as a graph's finisher does (a failed peer: the error and its rank
// in the status; ranks that disagree on the arguments: raised from the
// progress call that ended it, not signalled).
struct shm_signal_op_t final : coll::shm_op_t {
  comp_t comp;
  status_t status;
  void finish(const coll::shm_result_t& r) override
  {
    status_t s = status;
    if (r.errorcode == errorcode_t::fatal_peer_failure) {
      s.error = error_t(r.errorcode);
      s.rank = r.rank;
    } else if (r.errorcode != errorcode_t::done) {
      throw fatal_error(r.error);
    }
    comp.p_impl->signal(s);
  }
};

// The result of a collective on one rank: the input copied to the output
// (nothing for barrier and broadcast).
void one_rank(const coll::shm_request_t& r)
{
  size_t bytes = 0;
  switch (r.kind) {
    case coll::shm_kind_t::barrier:
    case coll::shm_kind_t::broadcast:
      return;
    case coll::shm_kind_t::reduce:
    case coll::shm_kind_t::allreduce:
    case coll::shm_kind_t::reduce_scatter:
      bytes = r.count * r.item_size;
      break;
    case coll::shm_kind_t::allgather:
    case coll::shm_kind_t::alltoall:
      bytes = r.size;
      break;
  }
  if (bytes && r.in != r.out) std::memmove(r.out, r.in, bytes);
}

// One collective under construction: the graph and the helpers that add
// point-to-point, copy and reduction nodes to it.
class coll_t
{
 public:
  coll_t(const char* call, kind_t kind, runtime_t runtime, device_t device,
         matching_engine_t me, comp_t comp, void* user_context)
      : call_(call), kind_(kind), runtime_(runtime), device_(device)
  {
    if (device_.is_empty() &&
        resolve_runtime(runtime, call)->default_device == nullptr)
      util::throw_fatal(call,
                        ": no device (the runtime has no default "
                        "device: pass .device())");
    rt_dev_t rd = resolve_device(runtime, device, call);
    runtime_impl_t* rt = rd.rt;
    runtime_ = runtime_t(rt);
    device_ = device_t(rd.dev);
    checked_engine(me, nullptr, call);
    matching_engine_impl_t* m = me.p_impl ? me.p_impl : rt->coll_me;
    if (!m) util::throw_fatal(call, ": the runtime has no collective engine");
    if (m->runtime != rt)
      util::throw_fatal(call,
                        ": the matching engine belongs to another "
                        "runtime");
    me_ = matching_engine_t(m);
    if (comp == COMP_NULL_RETRY)
      util::throw_fatal(call,
                        ": COMP_NULL_RETRY is not a completion object "
                        "for a collective (pass COMP_NULL to block, or "
                        "a completion object)");
    comp_ = comp;
    user_context_ = user_context;
    rank = rt->rank_me;
    nranks = rt->rank_n;
    // the node-local team serves the runtime's own collective engine
    // (other engines' collectives may run concurrently with its)
    if (m == rt->coll_me) team_ = rt->coll_team.get();
    seq_ = m->coll_seq.fetch_add(1, std::memory_order_relaxed) &
           ((uint64_t(1) << (64 - kStepBits - kKindBits)) - 1);
  }

  ~coll_t()
  {
    // not started (an argument was refused while building)
    if (graph_.is_empty()) return;
    free_comp(&graph_);
    delete fin_;
  }

  int rank = 0;
  int nranks = 1;

  // an algorithm option outside its enum (checked at every rank count,
  // not only where the algorithm matters)
  void check_algorithm(int value, int max) const
  {
    if (value < 0 || value > max)
      util::throw_fatal(call_, ": unknown algorithm ", value);
  }

  void check_root(int root) const
  {
    if (root < 0 || root >= nranks)
      util::throw_fatal(call_, ": root ", root, " is not a rank (0..",
                        nranks - 1, ")");
  }
  void check_buffer(const void* buf, size_t size, const char* name) const
  {
    if (!buf && size)
      util::throw_fatal(call_, ": ", name, " is null but ", size,
                        " bytes are to be accessed");
  }
  size_t check_items(size_t count, size_t item_size, size_t blocks,
                     reduce_op_t op) const
  {
    if (count && item_size == 0)
      util::throw_fatal(call_, ": item_size is 0 with count ", count);
    if (!op) util::throw_fatal(call_, ": null reduction operator");
    size_t limit = size_t(1) << 48;
    if (item_size > limit || count > limit / std::max<size_t>(item_size, 1) /
                                         std::max<size_t>(blocks, 1))
      util::throw_fatal(call_, ": ", count, " items of ", item_size,
                        " bytes is larger than any buffer");
    return count * item_size;
  }
  void check_size(size_t size, size_t blocks) const
  {
    if (size > (size_t(1) << 48) / std::max<size_t>(blocks, 1))
      util::throw_fatal(call_, ": size ", size,
                        " is negative or larger than any buffer");
  }

  // scratch memory that lives as long as the collective
  char* scratch(size_t size)
  {
    graph();
    size_t capacity;
    char* p = scratch_cache_t::get().take(size, &capacity);
    try {
      state_->scratch.emplace_back(p, capacity);
    } catch (...) {
      delete[] p;
      throw;
    }
    return p;
  }

  graph_node_t send(int peer, const void* buf, size_t size, uint64_t step)
  {
    graph_node_t n = graph_add_node_op(
        graph(),
        post_send_x(peer, const_cast<void*>(buf), size, tag(step), COMP_NULL)
            .runtime(runtime_)
            .device(device_)
            .matching_engine(me_)
            .allow_retry(false));
    graph_add_edge_x(graph(), n, state_node_).fn (&check_send)();
    return n;
  }
  graph_node_t recv(int peer, void* buf, size_t size, uint64_t step)
  {
    graph_node_t n = graph_add_node_op(
        graph(), post_recv_x(peer, buf, size, tag(step), COMP_NULL)
                     .runtime(runtime_)
                     .device(device_)
                     .matching_engine(me_)
                     .allow_retry(false));
    graph_add_edge_x(graph(), n, state_node_).fn (&check_recv_size)();
    return n;
  }
  graph_node_t copy(const void* src, void* dst, size_t size)
  {
    return graph_add_node_x(graph(), &copy_node_t::run)
        .value(new copy_node_t{src, dst, size})
        .free_cb(&delete_value<copy_node_t>)();
  }
  graph_node_t reduce(reduce_op_t op, void* dst, size_t count, size_t bytes,
                      std::vector<const void*> srcs)
  {
    // the operator may alias dst with an operand only at the same address
    // (see reduce_node_t); any other overlap reduces into scratch first
    bool aliased = false;
    for (size_t i = 0; i < srcs.size(); ++i)
      if (overlaps(dst, bytes, srcs[i], bytes) && (i > 1 || srcs[i] != dst))
        aliased = true;
    void* tmp = aliased && srcs.size() > 1 ? scratch(bytes) : nullptr;
    return graph_add_node_x(graph(), &reduce_node_t::run)
        .value(new reduce_node_t{op, dst, count, bytes, std::move(srcs), tmp})
        .free_cb(&delete_value<reduce_node_t>)();
  }
  // A copy of `size` bytes of `buf`, for an input that the collective's
  // own receives may overwrite. Returns the copy; *node is the copy's
  // node: the caller makes every node that writes `buf`'s bytes, or reads
  // the copy, follow it.
  const void* snapshot(const void* buf, size_t size, graph_node_t* node)
  {
    char* copy = scratch(size);
    *node = this->copy(buf, copy, size);
    return copy;
  }
  // a node that completes when its predecessors have
  graph_node_t join() { return graph_add_node_x(graph(), nullptr)(); }
  // b runs after a (no edge when a is null: b depends on nothing more)
  void edge(graph_node_t a, graph_node_t b)
  {
    if (a && b) graph_add_edge(graph(), a, b);
  }

  // this call's request for run_local
  coll::shm_request_t request(const void* in, void* out) const
  {
    coll::shm_request_t r;
    r.kind = kind_;
    r.call = call_;
    r.in = in;
    r.out = out;
    return r;
  }
  coll::shm_request_t reduction(const void* in, void* out, size_t count,
                                size_t item_size, reduce_op_t op) const
  {
    coll::shm_request_t r = request(in, out);
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
  bool run_local(const coll::shm_request_t& req, bool default_algorithm,
                 void* buffer, size_t size)
  {
    if (nranks > 1 && !(team_ && default_algorithm && team_->accepts(req)))
      return false;
    status_t status(errorcode_t::done);
    status.rank = rank;
    status.buffer = buffer;
    status.size = size;
    status.user_context = user_context_;
    if (nranks == 1) {
      one_rank(req);
      if (!comp_.is_empty()) comp_.p_impl->signal(status);
      return true;
    }
    if (!comp_.is_empty()) {
      auto op = std::make_shared<shm_signal_op_t>();
      op->comp = comp_;
      op->status = status;
      team_->start(op, req);
      team_->poll();  // rounds that need no peer go at once
      return true;
    }
    auto op = std::make_shared<shm_wait_op_t>();
    team_->start(op, req);
    // poll the team alone for a short while (a peer that is running
    // arrives within a few hundred nanoseconds, and a progress call in
    // between only delays seeing it), then also every other poll the
    // device (point-to-point traffic, peer checks, yielding the core when
    // idle); an error raised meanwhile is kept until the collective ended,
    // which must not touch the caller's buffers after it returned
    std::exception_ptr raised;
    for (unsigned spins = 1; !op->done.load(std::memory_order_acquire);
         ++spins) {
      try {
        if (team_->poll() || spins < kAlonePolls || (spins & 1) != 0) continue;
        progress_x().runtime(runtime_).device(device_)();
      } catch (...) {
        if (!raised) raised = std::current_exception();
      }
    }
    const coll::shm_result_t& r = op->result;
    if (r.errorcode == errorcode_t::fatal_peer_failure)
      throw peer_failure_error(r.error, r.rank);
    if (r.errorcode != errorcode_t::done) throw fatal_error(r.error);
    if (raised) std::rethrow_exception(raised);
    return true;
  }

  // Starts the collective; returns once it completed unless the caller gave
  // a completion object. `buffer`/`size` go to the completion status.
  void run(void* buffer, size_t size)
  {
    comp_t g = graph();
    fin_->comp = comp_;
    fin_->status = status_t(errorcode_t::done);
    fin_->status.rank = rank;
    fin_->status.buffer = buffer;
    fin_->status.size = size;
    fin_->status.user_context = user_context_;
    std::shared_ptr<wait_t> wait;
    if (comp_.is_empty()) {
      wait = std::make_shared<wait_t>();
      fin_->wait = wait;
    }
    // from here on the finisher owns the graph
    graph_ = comp_t();
    graph_start(g);
    if (!wait) return;
    // progress until done, yielding when idle (util/idle.hpp)
    while (!wait->done.load(std::memory_order_acquire))
      progress_x().runtime(runtime_).device(device_)();
    if (wait->failed.error.errorcode == errorcode_t::fatal_peer_failure)
      throw peer_failure_error(wait->error, wait->failed.rank);
    if (!wait->error.empty()) throw fatal_error(wait->error);
  }

 private:
  tag_t tag(uint64_t step) const
  {
    return (seq_ << (kStepBits + kKindBits)) |
           (static_cast<uint64_t>(kind_) << kStepBits) | step;
  }
  comp_t graph()
  {
    if (graph_.is_empty()) {
      fin_ = new finisher_t();
      graph_ = alloc_graph_x().comp(comp_t(fin_)).runtime(runtime_)();
      fin_->graph = graph_;
      state_ = new state_t();
      fin_->state = state_;
      // completes after every send and receive (their edges check the
      // statuses and the received sizes)
      state_node_ = graph_add_node_x(graph_, nullptr)
                        .value(state_)
                        .free_cb(&delete_value<state_t>)();
    }
    return graph_;
  }

  const char* call_;
  kind_t kind_;
  runtime_t runtime_;
  device_t device_;
  matching_engine_t me_;
  comp_t comp_;
  void* user_context_ = nullptr;
  comp_t graph_;
  finisher_t* fin_ = nullptr;
  state_t* state_ = nullptr;
  graph_node_t state_node_ = nullptr;
  uint64_t seq_ = 0;
  coll::shm_team_t* team_ = nullptr;
};

// ---- algorithms -----------------------------------------------------------
// Each adds its nodes to c's graph, every node after `after` (null: no
// dependency), and returns a node that completes when its part is done.

// the block of count items that block b of n is: items [off, off + len)
struct block_t {
  size_t off;
  size_t len;
};
block_t block_of(size_t count, int n, int b)
{
  size_t base = count / n, extra = count % n;
  size_t ub = static_cast<size_t>(b);
  return block_t{ub * base + std::min(ub, extra), base + (ub < extra ? 1 : 0)};
}

// Dissemination: in round k send to rank + 2^k, receive from rank - 2^k;
// round k + 1 sends after round k's message arrived.
graph_node_t barrier_dissemination(coll_t& c)
{
  int me = c.rank, n = c.nranks;
  graph_node_t prev = nullptr, done = c.join();
  uint64_t k = 0;
  for (int dist = 1; dist < n; dist <<= 1, ++k) {
    graph_node_t s = c.send(mod(me + dist, n), nullptr, 0, k);
    c.edge(prev, s);
    c.edge(s, done);
    prev = c.recv(mod(me - dist, n), nullptr, 0, k);
  }
  c.edge(prev, done);
  return done;
}

graph_node_t bcast_direct(coll_t& c, void* buf, size_t size, int root,
                          graph_node_t after)
{
  graph_node_t done = c.join();
  if (c.rank == root) {
    for (int j = 0; j < c.nranks; ++j) {
      if (j == root) continue;
      graph_node_t s = c.send(j, buf, size, 0);
      c.edge(after, s);
      c.edge(s, done);
    }
  } else {
    graph_node_t r = c.recv(root, buf, size, 0);
    c.edge(after, r);
    c.edge(r, done);
  }
  return done;
}

// Binomial tree rooted at root: a rank receives from its parent, then
// sends to its children, largest subtree first.
graph_node_t bcast_tree(coll_t& c, void* buf, size_t size, int root,
                        graph_node_t after)
{
  int n = c.nranks, r = mod(c.rank - root, n);
  graph_node_t got = after, done = c.join();
  int mask = 1;
  for (; mask < n; mask <<= 1) {
    if (r & mask) {
      got = c.recv(mod(r - mask + root, n), buf, size, 0);
      c.edge(after, got);
      c.edge(got, done);
      break;
    }
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (r + mask >= n) continue;
    graph_node_t s = c.send(mod(r + mask + root, n), buf, size, 0);
    c.edge(got, s);
    c.edge(s, done);
  }
  return done;
}

// A chain root -> root + 1 -> ... cut into chunks that are forwarded as
// soon as they arrive (a pipeline: large buffers).
graph_node_t bcast_ring(coll_t& c, void* buf, size_t size, int root,
                        graph_node_t after)
{
  int n = c.nranks, r = mod(c.rank - root, n);
  graph_node_t done = c.join();
  size_t nchunks = std::max<size_t>(1, (size + kRingChunk - 1) / kRingChunk);
  for (size_t i = 0; i < nchunks; ++i) {
    size_t off = i * kRingChunk;
    size_t len = std::min(kRingChunk, size - std::min(size, off));
    char* p = static_cast<char*>(buf) + (len ? off : 0);
    graph_node_t got = after;
    if (r > 0) {
      got = c.recv(mod(c.rank - 1, n), p, len, i);
      c.edge(after, got);
      c.edge(got, done);
    }
    if (r < n - 1) {
      graph_node_t s = c.send(mod(c.rank + 1, n), p, len, i);
      c.edge(got, s);
      c.edge(s, done);
    }
  }
  return done;
}

// Binomial reduction to root into acc (root: recvbuf; others: scratch),
// steps 0..31.
graph_node_t reduce_tree(coll_t& c, const void* sendbuf, void* acc,
                         size_t count, size_t bytes, reduce_op_t op, int root,
                         graph_node_t after)
{
  int n = c.nranks, r = mod(c.rank - root, n);
  graph_node_t prev = c.copy(sendbuf, acc, bytes);
  c.edge(after, prev);
  uint64_t k = 0;
  for (int mask = 1; mask < n; mask <<= 1, ++k) {
    if (r & mask) {
      graph_node_t s = c.send(mod(r - mask + root, n), acc, bytes, k);
      c.edge(prev, s);
      return s;
    }
    if (r + mask >= n) continue;
    char* tmp = c.scratch(bytes);
    graph_node_t got = c.recv(mod(r + mask + root, n), tmp, bytes, k);
    c.edge(after, got);
    graph_node_t red = c.reduce(op, acc, count, bytes, {acc, tmp});
    c.edge(prev, red);
    c.edge(got, red);
    prev = red;
  }
  return prev;
}

// Every rank sends its data to every other and reduces all of them in rank
// order (the same bytes everywhere).
graph_node_t allreduce_direct(coll_t& c, const void* sendbuf, void* recvbuf,
                              size_t count, size_t bytes, reduce_op_t op)
{
  int me = c.rank, n = c.nranks;
  std::vector<const void*> srcs(n);
  std::vector<graph_node_t> waits;
  for (int j = 0; j < n; ++j) {
    if (j == me) {
      srcs[j] = sendbuf;
      continue;
    }
    waits.push_back(c.send(j, sendbuf, bytes, 0));
    char* tmp = c.scratch(bytes);
    srcs[j] = tmp;
    waits.push_back(c.recv(j, tmp, bytes, 0));
  }
  // the result overwrites recvbuf only once every send of sendbuf (which
  // may be recvbuf) completed; the reduction itself reads sendbuf before it
  // overwrites it (coll_t::reduce)
  graph_node_t red = c.reduce(op, recvbuf, count, bytes, std::move(srcs));
  for (graph_node_t w : waits) c.edge(w, red);
  return red;
}

// Recursive doubling over the largest power of two p <= n; the first
// 2 (n - p) ranks pair up first (even ranks hand their data to the odd
// neighbour and get the result back at the end). Partners combine as
// op(lower ranks, higher ranks), so every rank computes the same bytes.
graph_node_t allreduce_rd(coll_t& c, const void* sendbuf, void* acc,
                          size_t count, size_t bytes, reduce_op_t op)
{
  int me = c.rank, n = c.nranks;
  int p = 1;
  while (p * 2 <= n) p *= 2;
  int rem = n - p;
  graph_node_t prev = c.copy(sendbuf, acc, bytes);
  int newrank;
  if (me < 2 * rem) {
    if (me % 2 == 0) {
      graph_node_t s = c.send(me + 1, acc, bytes, 0);
      c.edge(prev, s);
      graph_node_t got = c.recv(me + 1, acc, bytes, kStepLast);
      c.edge(s, got);
      return got;
    }
    char* tmp = c.scratch(bytes);
    graph_node_t got = c.recv(me - 1, tmp, bytes, 0);
    graph_node_t red = c.reduce(op, acc, count, bytes, {tmp, acc});
    c.edge(prev, red);
    c.edge(got, red);
    prev = red;
    newrank = me / 2;
  } else {
    newrank = me - rem;
  }
  uint64_t k = 1;
  for (int mask = 1; mask < p; mask <<= 1, ++k) {
    int pn = newrank ^ mask;
    int partner = pn < rem ? pn * 2 + 1 : pn + rem;
    graph_node_t s = c.send(partner, acc, bytes, k);
    c.edge(prev, s);
    char* tmp = c.scratch(bytes);
    graph_node_t got = c.recv(partner, tmp, bytes, k);
    std::vector<const void*> srcs = partner < me
                                        ? std::vector<const void*>{tmp, acc}
                                        : std::vector<const void*>{acc, tmp};
    graph_node_t red = c.reduce(op, acc, count, bytes, std::move(srcs));
    c.edge(s, red);  // acc changes only once it has been sent
    c.edge(got, red);
    prev = red;
  }
  if (me < 2 * rem) {
    graph_node_t s = c.send(me - 1, acc, bytes, kStepLast);
    c.edge(prev, s);
    return s;
  }
  return prev;
}

// Ring reduce-scatter of acc's n blocks, steps base..base + n - 2: at step
// s a rank sends block (rank - s + shift) to its right neighbour and adds
// the block (rank - s - 1 + shift) coming from its left; at the end it
// holds the whole reduction of block (rank + 1 + shift). Returns the node
// that completes when every send and reduction of the phase did.
graph_node_t ring_reduce_scatter(coll_t& c, char* acc, size_t count,
                                 size_t item_size, reduce_op_t op, int shift,
                                 uint64_t base, graph_node_t after)
{
  int me = c.rank, n = c.nranks;
  int right = mod(me + 1, n), left = mod(me - 1, n);
  size_t max_block = block_of(count, n, 0).len * item_size;
  char* tmp = c.scratch(max_block * (n - 1));
  graph_node_t prev = after, done = c.join();
  c.edge(after, done);
  for (int s = 0; s < n - 1; ++s) {
    block_t sb = block_of(count, n, mod(me - s + shift, n));
    block_t rb = block_of(count, n, mod(me - s - 1 + shift, n));
    graph_node_t snd =
        c.send(right, acc + sb.off * item_size, sb.len * item_size, base + s);
    c.edge(prev, snd);
    c.edge(snd, done);
    char* t = tmp + s * max_block;
    graph_node_t got = c.recv(left, t, rb.len * item_size, base + s);
    c.edge(after, got);
    char* dst = acc + rb.off * item_size;
    graph_node_t red = c.reduce(op, dst, rb.len, rb.len * item_size, {dst, t});
    c.edge(prev, red);
    c.edge(got, red);
    c.edge(red, done);
    prev = red;
  }
  return done;
}

// Ring allgather of buf's n blocks (block b of `len(b)` bytes at `off(b)`),
// steps base..base + n - 2: a rank owns block (rank + shift) and forwards
// what it receives.
template <typename Layout>
graph_node_t ring_allgather(coll_t& c, char* buf, Layout layout, int shift,
                            uint64_t base, graph_node_t after)
{
  int me = c.rank, n = c.nranks;
  int right = mod(me + 1, n), left = mod(me - 1, n);
  graph_node_t prev = after, done = c.join();
  c.edge(after, done);
  for (int t = 0; t < n - 1; ++t) {
    std::pair<size_t, size_t> sb = layout(mod(me + shift - t, n));
    std::pair<size_t, size_t> rb = layout(mod(me + shift - t - 1, n));
    graph_node_t snd = c.send(right, buf + sb.first, sb.second, base + t);
    c.edge(prev, snd);
    c.edge(snd, done);
    graph_node_t got = c.recv(left, buf + rb.first, rb.second, base + t);
    c.edge(after, got);
    c.edge(got, done);
    prev = got;
  }
  return done;
}

// Ring allreduce: reduce-scatter then allgather (bandwidth-optimal).
graph_node_t allreduce_ring(coll_t& c, const void* sendbuf, void* recvbuf,
                            size_t count, size_t item_size, reduce_op_t op)
{
  int n = c.nranks;
  char* acc = static_cast<char*>(recvbuf);
  graph_node_t cp = c.copy(sendbuf, acc, count * item_size);
  graph_node_t rs = ring_reduce_scatter(c, acc, count, item_size, op, 0, 0, cp);
  auto layout = [count, n, item_size](int b) {
    block_t bl = block_of(count, n, b);
    return std::make_pair(bl.off * item_size, bl.len * item_size);
  };
  return ring_allgather(c, acc, layout, 1, n - 1, rs);
}

}  // namespace

// ---- the operations ---------------------------------------------------------

const char* get_broadcast_algorithm_str(broadcast_algorithm_t algorithm)
{
  static const char* const names[] = {"none", "direct", "tree", "ring"};
  unsigned i = static_cast<unsigned>(algorithm);
  return i < 4 ? names[i] : "unknown";
}

const char* get_allreduce_algorithm_str(allreduce_algorithm_t algorithm)
{
  static const char* const names[] = {"none", "direct", "tree", "ring"};
  unsigned i = static_cast<unsigned>(algorithm);
  return i < 4 ? names[i] : "unknown";
}

const char* get_reduce_scatter_algorithm_str(
    reduce_scatter_algorithm_t algorithm)
{
  static const char* const names[] = {"none", "direct", "tree", "ring"};
  unsigned i = static_cast<unsigned>(algorithm);
  return i < 4 ? names[i] : "unknown";
}

const char* get_allgather_algorithm_str(allgather_algorithm_t algorithm)
{
  static const char* const names[] = {"none", "direct", "ring"};
  unsigned i = static_cast<unsigned>(algorithm);
  return i < 3 ? names[i] : "unknown";
}

void barrier_x::call_impl(runtime_t runtime, device_t device,
                          matching_engine_t matching_engine, comp_t comp,
                          void* user_context)
{
  coll_t c("barrier", kind_t::barrier, runtime, device, matching_engine, comp,
           user_context);
  if (c.run_local(c.request(nullptr, nullptr), true, nullptr, 0)) return;
  barrier_dissemination(c);
  c.run(nullptr, 0);
}

void broadcast_x::call_impl(void* buffer, size_t size, int root,
                            runtime_t runtime, device_t device,
                            matching_engine_t matching_engine, comp_t comp,
                            void* user_context, broadcast_algorithm_t algorithm)
{
  coll_t c("broadcast", kind_t::broadcast, runtime, device, matching_engine,
           comp, user_context);
  c.check_root(root);
  c.check_size(size, 1);
  c.check_buffer(buffer, size, "buffer");
  c.check_algorithm(static_cast<int>(algorithm),
                    static_cast<int>(broadcast_algorithm_t::ring));
  coll::shm_request_t req = c.request(buffer, buffer);
  req.size = size;
  req.root = root;
  if (c.run_local(req, algorithm == broadcast_algorithm_t::none, buffer, size))
    return;
  int n = c.nranks;
  if (algorithm == broadcast_algorithm_t::none)
    algorithm = n <= 3                      ? broadcast_algorithm_t::direct
                : size >= (size_t(1) << 20) ? broadcast_algorithm_t::ring
                                            : broadcast_algorithm_t::tree;
  if (n > 1) {
    switch (algorithm) {
      case broadcast_algorithm_t::direct:
        bcast_direct(c, buffer, size, root, nullptr);
        break;
      case broadcast_algorithm_t::tree:
        bcast_tree(c, buffer, size, root, nullptr);
        break;
      case broadcast_algorithm_t::ring:
        bcast_ring(c, buffer, size, root, nullptr);
        break;
      default:
        util::throw_fatal("broadcast: unknown algorithm ",
                          static_cast<int>(algorithm));
    }
  }
  c.run(buffer, size);
}

void reduce_x::call_impl(const void* sendbuf, void* recvbuf, size_t count,
                         size_t item_size, reduce_op_t op, int root,
                         runtime_t runtime, device_t device,
                         matching_engine_t matching_engine, comp_t comp,
                         void* user_context)
{
  coll_t c("reduce", kind_t::reduce, runtime, device, matching_engine, comp,
           user_context);
  c.check_root(root);
  size_t bytes = c.check_items(count, item_size, 1, op);
  c.check_buffer(sendbuf, bytes, "sendbuf");
  if (c.rank == root) c.check_buffer(recvbuf, bytes, "recvbuf");
  coll::shm_request_t req = c.reduction(
      sendbuf, c.rank == root ? recvbuf : nullptr, count, item_size, op);
  req.root = root;
  if (c.run_local(req, true, c.rank == root ? recvbuf : nullptr,
                  c.rank == root ? bytes : 0))
    return;
  void* acc = c.rank == root ? recvbuf : c.scratch(bytes);
  reduce_tree(c, sendbuf, acc, count, bytes, op, root, nullptr);
  c.run(c.rank == root ? recvbuf : nullptr, c.rank == root ? bytes : 0);
}

void allreduce_x::call_impl(const void* sendbuf, void* recvbuf, size_t count,
                            size_t item_size, reduce_op_t op, runtime_t runtime,
                            device_t device, matching_engine_t matching_engine,
                            comp_t comp, void* user_context,
                            allreduce_algorithm_t algorithm)
{
  coll_t c("allreduce", kind_t::allreduce, runtime, device, matching_engine,
           comp, user_context);
  size_t bytes = c.check_items(count, item_size, 1, op);
  c.check_buffer(sendbuf, bytes, "sendbuf");
  c.check_buffer(recvbuf, bytes, "recvbuf");
  c.check_algorithm(static_cast<int>(algorithm),
                    static_cast<int>(allreduce_algorithm_t::ring));
  if (c.run_local(c.reduction(sendbuf, recvbuf, count, item_size, op),
                  algorithm == allreduce_algorithm_t::none, recvbuf, bytes))
    return;
  int n = c.nranks;
  if (algorithm == allreduce_algorithm_t::none)
    algorithm =
        n > 2 && bytes >= (size_t(64) << 10) && count >= static_cast<size_t>(n)
            ? allreduce_algorithm_t::ring
            : allreduce_algorithm_t::tree;
  if (n == 1) {
    c.copy(sendbuf, recvbuf, bytes);
  } else {
    switch (algorithm) {
      case allreduce_algorithm_t::direct:
        allreduce_direct(c, sendbuf, recvbuf, count, bytes, op);
        break;
      case allreduce_algorithm_t::tree:
        allreduce_rd(c, sendbuf, recvbuf, count, bytes, op);
        break;
      case allreduce_algorithm_t::ring:
        allreduce_ring(c, sendbuf, recvbuf, count, item_size, op);
        break;
      default:
        util::throw_fatal("allreduce: unknown algorithm ",
                          static_cast<int>(algorithm));
    }
  }
  c.run(recvbuf, bytes);
}

void reduce_scatter_x::call_impl(const void* sendbuf, void* recvbuf,
                                 size_t recvcount, size_t item_size,
                                 reduce_op_t op, runtime_t runtime,
                                 device_t device,
                                 matching_engine_t matching_engine, comp_t comp,
                                 void* user_context,
                                 reduce_scatter_algorithm_t algorithm)
{
  coll_t c("reduce_scatter", kind_t::reduce_scatter, runtime, device,
           matching_engine, comp, user_context);
  int me = c.rank, n = c.nranks;
  size_t bytes = c.check_items(recvcount, item_size, n, op);
  c.check_buffer(sendbuf, bytes * n, "sendbuf");
  c.check_buffer(recvbuf, bytes, "recvbuf");
  c.check_algorithm(static_cast<int>(algorithm),
                    static_cast<int>(reduce_scatter_algorithm_t::ring));
  if (c.run_local(c.reduction(sendbuf, recvbuf, recvcount, item_size, op),
                  algorithm == reduce_scatter_algorithm_t::none, recvbuf,
                  bytes))
    return;
  const char* in = static_cast<const char*>(sendbuf);
  if (algorithm == reduce_scatter_algorithm_t::none)
    algorithm = n > 2 && bytes * n >= (size_t(64) << 10)
                    ? reduce_scatter_algorithm_t::ring
                    : reduce_scatter_algorithm_t::direct;
  if (n == 1) {
    c.copy(sendbuf, recvbuf, bytes);
  } else if (algorithm == reduce_scatter_algorithm_t::direct) {
    std::vector<const void*> srcs(n);
    std::vector<graph_node_t> waits;
    for (int j = 0; j < n; ++j) {
      if (j == me) {
        srcs[j] = in + me * bytes;
        continue;
      }
      waits.push_back(c.send(j, in + j * bytes, bytes, 0));
      char* tmp = c.scratch(bytes);
      srcs[j] = tmp;
      waits.push_back(c.recv(j, tmp, bytes, 0));
    }
    graph_node_t red = c.reduce(op, recvbuf, recvcount, bytes, srcs);
    for (graph_node_t w : waits) c.edge(w, red);
  } else if (algorithm == reduce_scatter_algorithm_t::ring) {
    char* acc = c.scratch(bytes * n);
    graph_node_t cp = c.copy(sendbuf, acc, bytes * n);
    // shift -1: rank r ends with block r
    graph_node_t rs =
        ring_reduce_scatter(c, acc, recvcount * n, item_size, op, -1, 0, cp);
    graph_node_t out = c.copy(acc + me * bytes, recvbuf, bytes);
    c.edge(rs, out);
  } else if (algorithm == reduce_scatter_algorithm_t::tree) {
    // binomial reduce of the whole buffer to rank 0, which then sends each
    // rank its block
    char* acc = c.scratch(bytes * n);
    graph_node_t red =
        reduce_tree(c, sendbuf, acc, recvcount * n, bytes * n, op, 0, nullptr);
    if (me == 0) {
      for (int j = 1; j < n; ++j)
        c.edge(red, c.send(j, acc + j * bytes, bytes, kStepScatter));
      c.edge(red, c.copy(acc, recvbuf, bytes));
    } else {
      c.edge(red, c.recv(0, recvbuf, bytes, kStepScatter));
    }
  } else {
    util::throw_fatal("reduce_scatter: unknown algorithm ",
                      static_cast<int>(algorithm));
  }
  c.run(recvbuf, bytes);
}

void allgather_x::call_impl(const void* sendbuf, void* recvbuf, size_t size,
                            runtime_t runtime, device_t device,
                            matching_engine_t matching_engine, comp_t comp,
                            void* user_context, allgather_algorithm_t algorithm)
{
  coll_t c("allgather", kind_t::allgather, runtime, device, matching_engine,
           comp, user_context);
  int me = c.rank, n = c.nranks;
  c.check_size(size, n);
  c.check_buffer(sendbuf, size, "sendbuf");
  c.check_buffer(recvbuf, size * n, "recvbuf");
  c.check_algorithm(static_cast<int>(algorithm),
                    static_cast<int>(allgather_algorithm_t::ring));
  coll::shm_request_t req = c.request(sendbuf, recvbuf);
  req.size = size;
  if (c.run_local(req, algorithm == allgather_algorithm_t::none, recvbuf,
                  size * n))
    return;
  char* out = static_cast<char*>(recvbuf);
  if (algorithm == allgather_algorithm_t::none)
    algorithm = n > 2 && size * n >= (size_t(64) << 10)
                    ? allgather_algorithm_t::ring
                    : allgather_algorithm_t::direct;
  // sendbuf may be this rank's block of recvbuf (nothing to copy, and no
  // receive writes it); any other overlap with recvbuf is read into
  // scratch before a receive may overwrite it
  graph_node_t snap = nullptr;
  if (sendbuf != out + me * size && overlaps(sendbuf, size, out, size * n))
    sendbuf = c.snapshot(sendbuf, size, &snap);
  graph_node_t cp = c.copy(sendbuf, out + me * size, size);
  c.edge(snap, cp);
  if (n > 1) {
    if (algorithm == allgather_algorithm_t::direct) {
      for (int j = 0; j < n; ++j) {
        if (j == me) continue;
        c.edge(snap, c.send(j, sendbuf, size, 0));
        c.edge(snap, c.recv(j, out + j * size, size, 0));
      }
    } else if (algorithm == allgather_algorithm_t::ring) {
      auto layout = [size](int b) { return std::make_pair(b * size, size); };
      ring_allgather(c, out, layout, 0, 0, cp);
    } else {
      util::throw_fatal("allgather: unknown algorithm ",
                        static_cast<int>(algorithm));
    }
  }
  c.run(recvbuf, size * n);
}

void alltoall_x::call_impl(const void* sendbuf, void* recvbuf, size_t size,
                           runtime_t runtime, device_t device,
                           matching_engine_t matching_engine, comp_t comp,
                           void* user_context)
{
  coll_t c("alltoall", kind_t::alltoall, runtime, device, matching_engine, comp,
           user_context);
  int me = c.rank, n = c.nranks;
  c.check_size(size, n);
  c.check_buffer(sendbuf, size * n, "sendbuf");
  c.check_buffer(recvbuf, size * n, "recvbuf");
  coll::shm_request_t req = c.request(sendbuf, recvbuf);
  req.size = size;
  if (c.run_local(req, true, recvbuf, size * n)) return;
  const char* in = static_cast<const char*>(sendbuf);
  char* out = static_cast<char*>(recvbuf);
  // in place (or any overlap): the receives would overwrite blocks not
  // sent yet, so the input is read into scratch first
  graph_node_t snap = nullptr;
  if (overlaps(in, size * n, out, size * n))
    in = static_cast<const char*>(c.snapshot(in, size * n, &snap));
  c.edge(snap, c.copy(in + me * size, out + me * size, size));
  for (int j = 0; j < n; ++j) {
    if (j == me) continue;
    c.edge(snap, c.send(j, in + j * size, size, 0));
    c.edge(snap, c.recv(j, out + j * size, size, 0));
  }
  c.run(recvbuf, size * n);
}

}  // namespace lci
