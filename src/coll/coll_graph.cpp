// coll_t and the completion of the point-to-point collectives; see
// coll_graph.hpp.
#include "coll/coll_graph.hpp"

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "util/error.hpp"
#include "util/idle.hpp"

namespace lci::coll
{
namespace
{

// polls of the node-local team before a blocking call also drives progress
constexpr unsigned kAlonePolls = 128;
// loads of the awaited line between two polls of a blocking node-local
// collective (a few hundred nanoseconds when nothing changes)
constexpr unsigned kSpinLoads = 64;

// How a blocking collective waits. With a core per rank of the node (the
// team knows), it keeps its core: giving it away (the library's idle
// policy, util/idle.hpp) hands it to other jobs' processes for a time
// slice while the peer it waits for runs on its own core, and the MPI
// implementations do not either. With more ranks than cores the rank it
// waits for may be waiting for this core, so a node-local collective
// gives it away at every poll that finds it still waiting (wait_team), as
// Open MPI does when oversubscribed; without a team
// (collectives off, or not this engine's) the library's policy applies.
bool keeps_core(team_base_t* team)
{
  return team && !static_cast<shm_team_t*>(team)->oversubscribed();
}

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

template <typename T>
void delete_value(void* v)
{
  delete static_cast<T*>(v);
}

// Scratch buffers of 64 KiB and more are kept for the next collectives, by
// power-of-two size class, up to kCacheBytes in all: a fresh buffer comes
// from the heap top or mmap, and the network's copy into it then takes a
// page fault per page.
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

}  // namespace

// What a collective owns besides its graph's nodes: scratch buffers, and
// the first error its steps found.
struct state_t {
  std::vector<std::pair<char*, size_t>> scratch;  // buffer, capacity
  std::mutex mu;
  std::string error;
  // when `error` is a failed peer: its status (errorcode, rank)
  status_t failed{errorcode_t::done};
  // set with `failed`: the collective posts nothing more
  std::atomic<bool> stopped{false};
  // set with any other error: the collective's later sends carry no
  // data, so that every rank downstream finds an error too (a message
  // shorter than expected) instead of forwarding what this rank holds
  std::atomic<bool> poisoned{false};
  ~state_t()
  {
    for (auto& b : scratch) scratch_cache_t::get().give(b.first, b.second);
  }
};

namespace
{

void record_error(state_t* state, const std::string& error,
                  const status_t* failed = nullptr)
{
  std::lock_guard<std::mutex> lock(state->mu);
  if (!state->error.empty()) return;
  state->error = error;
  if (failed) {
    state->failed = *failed;
    state->stopped.store(true, std::memory_order_release);
  } else {
    state->poisoned.store(true, std::memory_order_release);
  }
}

// A step of a collective that ended with a failed peer: the first such
// error, naming the collective, the step, its peer and the failed rank.
void record_failure(state_t* state, const char* what, int peer, tag_t tag,
                    status_t status)
{
  std::ostringstream os;
  os << "lci::" << kind_name(tag_kind(tag)) << ": the " << what << " rank "
     << peer << " in step " << tag_step(tag);
  if (status.rank != peer) os << " was withdrawn: rank " << status.rank;
  os << " failed: " << status.error.get_str();
  record_error(state, os.str(), &status);
}

// A post of a collective as a graph node. Once the collective knows of a
// failed rank (a step of its own failed, or the runtime knows one: every
// rank takes part in every collective), its later posts complete at once
// without posting: a rank never forwards data that lacks a failed rank's
// part, and never waits for a peer that will not send either.
template <typename Op>
struct step_node_t {
  Op op;
  state_t* state;
  const char* what;
  status_t operator()()
  {
    if (!state->stopped.load(std::memory_order_acquire)) {
      int failed = first_failed_rank(op.runtime_);
      if (failed < 0) {
        try {
          if (!state->poisoned.load(std::memory_order_acquire)) return op();
          return poisoned(op);
        } catch (const peer_failure_error& e) {
          // the peer was found failed between the check and the post
          failed = e.failed_rank();
        }
      }
      status_t s(errorcode_t::fatal_peer_failure);
      s.rank = failed;
      record_failure(state, what, op.rank_, op.tag_, s);
    }
    return status_t(errorcode_t::done);
  }
  void user_context(void* v) { op.user_context(v); }
  // a send without data; a receive as it is (it still has to match)
  static status_t poisoned(post_send_x& op)
  {
    post_send_x empty = op;
    empty.size_ = 0;
    return empty();
  }
  static status_t poisoned(post_recv_x& op) { return op(); }
};
using send_node_t = step_node_t<post_send_x>;
using recv_node_t = step_node_t<post_recv_x>;

// A receive of a collective that failed, or got fewer bytes than
// expected: recorded, and raised once the collective completed (its graph
// can then be freed).
void check_recv(status_t status, void* src_value, void* dst_value)
{
  auto* node = static_cast<recv_node_t*>(src_value);
  auto* state = static_cast<state_t*>(dst_value);
  const post_recv_x& op = node->op;
  if (status.error.is_fatal()) {
    // the sweep of a failed peer names it; other failures name the source
    if (status.error.errorcode != errorcode_t::fatal_peer_failure ||
        status.rank < 0)
      status.rank = op.rank_;
    record_failure(state, "receive from", op.rank_, op.tag_, status);
    return;
  }
  // a receive that was not posted (the collective had stopped) has its
  // error recorded already
  if (status.size == op.size_ || state->stopped.load(std::memory_order_acquire))
    return;
  std::ostringstream os;
  os << "lci::" << kind_name(tag_kind(op.tag_)) << ": rank " << status.rank
     << " sent " << status.size << " bytes in step " << tag_step(op.tag_)
     << " where " << op.size_
     << " were expected (do all ranks pass the same sizes, counts and "
        "root?)";
  record_error(state, os.str());
}

// A send of a collective that failed: recorded the same way.
void check_send(status_t status, void* src_value, void* dst_value)
{
  if (!status.error.is_fatal()) return;
  const post_send_x& op = static_cast<send_node_t*>(src_value)->op;
  status.rank = op.rank_;
  record_failure(static_cast<state_t*>(dst_value), "send to", op.rank_, op.tag_,
                 status);
}

// What a blocking caller waits for (shared: a caller that left on an
// exception does not own it alone).
struct wait_t {
  std::atomic<bool> done{false};
  std::string error;
  status_t failed{errorcode_t::done};
};

}  // namespace

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
  // a hierarchical collective's part: every error goes to *error_out and
  // `comp` is signalled with fatal (or the failed peer's status)
  std::string* error_out = nullptr;
  void signal(status_t) override
  {
    std::string error = std::move(state->error);
    status_t failed = state->failed;
    comp_t g = graph;
    free_comp(&g);
    comp_t c = comp;
    status_t s = status;
    std::shared_ptr<wait_t> w = std::move(wait);
    std::string* out = error_out;
    delete this;
    if (out && !error.empty()) {
      *out = std::move(error);
      s.error =
          failed.error.is_fatal() ? failed.error : error_t(errorcode_t::fatal);
      s.rank = failed.error.is_fatal() ? failed.rank : -1;
      c.p_impl->signal(s);
    } else if (w) {
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

namespace
{

// The status a nonblocking node-local (or hierarchical) collective
// signals: `s`, with the error and rank of a failed peer; any other error
// (the ranks disagreed) is raised instead.
status_t ended_status(status_t s, const shm_result_t& r)
{
  if (r.errorcode == errorcode_t::fatal_peer_failure) {
    s.error = error_t(r.errorcode);
    s.rank = r.rank;
  } else if (r.errorcode != errorcode_t::done) {
    throw fatal_error(r.error);
  }
  return s;
}

// A nonblocking node-local collective: signals the caller's completion
// object as a graph's finisher does (a failed peer: the error and its rank
// in the status; ranks that disagree on the arguments: raised from the
// progress call that ended it, not signalled).
struct shm_signal_op_t final : shm_op_t {
  comp_t comp;
  status_t status;
  void finish(const shm_result_t& r) override
  {
    std::unique_ptr<shm_signal_op_t> self(this);
    status_t s = ended_status(status, r);
    comp_t c = comp;
    self.reset();
    c.p_impl->signal(s);
  }
  void abandon() override { delete this; }
};

}  // namespace

void coll_t::destroy()
{
  free_comp(&graph_);
  delete fin_;
}

char* coll_t::scratch(size_t size)
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

// A collective's send completes when the network has taken the message,
// not when its buffer is free: a provider with manual progress (libfabric
// rxm) may hold a copied message until its endpoint is progressed again
// (the connection to the peer not yet set up), and a caller that leaves a
// collective may never progress that device again while the peer waits.
graph_node_t coll_t::send(int peer, const void* buf, size_t size, uint64_t step)
{
  comp_t g = graph();
  graph_node_t n = graph_add_node_op(
      g, send_node_t{post_send_x(this->peer(peer), const_cast<void*>(buf), size,
                                 tag(step), g)
                         .runtime(call_.runtime)
                         .device(call_.device)
                         .matching_engine(call_.engine)
                         .allow_retry(false)
                         .comp_semantic(comp_semantic_t::network),
                     state_, "send to"});
  graph_add_edge_x(g, n, state_node_).fn (&check_send)();
  return n;
}

graph_node_t coll_t::recv(int peer, void* buf, size_t size, uint64_t step)
{
  comp_t g = graph();
  graph_node_t n = graph_add_node_op(
      g, recv_node_t{post_recv_x(this->peer(peer), buf, size, tag(step), g)
                         .runtime(call_.runtime)
                         .device(call_.device)
                         .matching_engine(call_.engine)
                         .allow_retry(false),
                     state_, "receive from"});
  graph_add_edge_x(g, n, state_node_).fn (&check_recv)();
  return n;
}

graph_node_t coll_t::copy(const void* src, void* dst, size_t size)
{
  return graph_add_node_x(graph(), &copy_node_t::run)
      .value(new copy_node_t{src, dst, size})
      .free_cb(&delete_value<copy_node_t>)();
}

graph_node_t coll_t::reduce(reduce_op_t op, void* dst, size_t count,
                            size_t bytes, std::vector<const void*> srcs)
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

const void* coll_t::snapshot(const void* buf, size_t size, graph_node_t* node)
{
  char* copy = scratch(size);
  *node = this->copy(buf, copy, size);
  return copy;
}

void coll_t::make_graph()
{
  fin_ = new finisher_t();
  graph_ = alloc_graph_x().comp(comp_t(fin_)).runtime(call_.runtime)();
  fin_->graph = graph_;
  state_ = new state_t();
  fin_->state = state_;
  // completes after every send and receive (their edges check the
  // statuses and the received sizes)
  state_node_ = graph_add_node_x(graph_, nullptr)
                    .value(state_)
                    .free_cb(&delete_value<state_t>)();
}

void coll_t::start_team(const shm_request_t& req, const status_t& status)
{
  auto* op = new shm_signal_op_t();
  op->comp = comp_;
  op->status = status;
  team()->start(op, req, true);  // rounds that need no peer go at once
  team()->poll();
}

void coll_t::wait_team(const shm_request_t& req, shm_team_t::small_t small,
                       lazy_wait_t& wait)
{
  shm_team_t* team = this->team();
  if (small == shm_team_t::small_t::declined) lazy_wait_t::make(&wait);
  shm_wait_op_t* op = wait.op;
  // poll the team alone for a short while (a running peer arrives soon,
  // and a progress call in between only delays seeing it), then also every
  // other poll the device (point-to-point traffic, peer checks, yielding
  // the core when idle); an error raised meanwhile is kept until the
  // collective ended, which must not touch the caller's buffers after it
  // returned
  //
  // With more ranks than cores on the node, the rank this one waits for
  // may need this core: every poll that finds the collective still waiting
  // also progresses the device and then gives the core away, as Open MPI
  // does when oversubscribed.
  const bool keep = keeps_core(team);
  std::exception_ptr raised;
  try {
    if (small == shm_team_t::small_t::declined) team->start(op, req, true);
  } catch (...) {
    raised = std::current_exception();
  }
  for (unsigned spins = 1; !op->done.load(std::memory_order_acquire); ++spins) {
    try {
      if (team->poll()) continue;
      // with a core per rank: until the line it waits for changes, or a
      // while, loads that hit this core's cache, where a poll runs the
      // team's every check
      if (keep && (op->spin_on_wait(kSpinLoads) || spins < kAlonePolls ||
                   (spins & 1) != 0))
        continue;
      if (keep) util::idle_keep_core();
      // the device alone (its runtime is the call's): the handle check
      // then takes its per-thread cached path
      progress_x().device(call_.device)();
      if (!keep && !op->done.load(std::memory_order_acquire))
        std::this_thread::yield();
    } catch (...) {
      if (!raised) raised = std::current_exception();
    }
  }
  const shm_result_t& r = op->result;
  if (r.errorcode == errorcode_t::fatal_peer_failure)
    throw peer_failure_error(r.error, r.rank);
  if (r.errorcode != errorcode_t::done) throw fatal_error(r.error);
  if (raised) std::rethrow_exception(raised);
}

void coll_t::run(void* buffer, size_t size)
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
  // progress until done (wait_policy)
  const bool keep = keeps_core(call_.team);
  while (!wait->done.load(std::memory_order_acquire)) {
    if (keep) util::idle_keep_core();
    progress_x().device(call_.device)();
  }
  if (wait->failed.error.errorcode == errorcode_t::fatal_peer_failure)
    throw peer_failure_error(wait->error, wait->failed.rank);
  if (!wait->error.empty()) throw fatal_error(wait->error);
}

// A hierarchical collective: up to three parts, the node-local stage
// before (A), the point-to-point part among the nodes' representatives (G,
// on representatives only) and the node-local stage after (B). A and B are
// queued on the team at the call, so every rank of a node queues them in
// the same order; G starts once A ended, and a representative's B waits at
// its gate until G ended. It ends when every part did (the first error
// wins; a peer failure in A or G goes on to the ranks that wait in B). It
// frees itself, unless a blocking caller waits for it.
struct hier_t {
  // a node-local stage
  enum part_t { kSetup, kBefore, kGraph, kAfter };
  struct stage_t final : shm_op_t {
    hier_t* h = nullptr;
    part_t part = kBefore;
    void finish(const shm_result_t& r) override { h->part_done(r, part); }
    // the runtime is being freed with the stage still queued
    void abandon() override { h->part_abandoned(); }
  };
  // G's completion (its finisher's comp)
  struct graph_done_t final : comp_impl_t {
    hier_t* h = nullptr;
    void signal(status_t s) override
    {
      // given up (give_up_graph): the caller left; this object stays
      // allocated for this call and nothing waits for it
      if (h->g_given_up.load(std::memory_order_acquire)) return;
      shm_result_t r;
      if (s.error.is_fatal()) {
        r.errorcode = s.error.errorcode;
        r.rank = s.rank;
        r.error = std::move(h->graph_error);
      }
      h->part_done(r, kGraph);
    }
  };

  shm_team_t* team = nullptr;
  stage_t a, b;
  graph_done_t g_done;
  std::string graph_error;
  std::mutex mu;
  int parts = 1;  // not ended yet, the setup included
  bool a_pending = false;
  bool g_ready = false;         // built (or none) and waiting for A
  comp_t graph;                 // G, not started yet
  finisher_t* g_fin = nullptr;  // G's completion, to free G unstarted
  bool g_running = false;       // G started and not ended
  std::atomic<bool> g_given_up{false};
  bool abandoned = false;  // a stage was dropped with its runtime
  bool b_gated = false;
  shm_result_t result;
  // the caller: a completion object, or a blocking wait
  comp_t comp;
  status_t status;
  bool blocking = false;
  std::atomic<bool> done{false};

  hier_t()
  {
    a.h = this;
    b.h = this;
    b.part = kAfter;
    g_done.h = this;
  }

  void keep(const shm_result_t& r)
  {
    if (r.errorcode != errorcode_t::done &&
        result.errorcode == errorcode_t::done)
      result = r;
  }
  // one part ended; A's end starts G, G's end opens B's gate
  // (the part counts as ended only after what it starts: this object
  // lives until then)
  // (`ended` parts at once: the setup may end together with its part)
  void part_done(const shm_result_t& r, part_t part, int ended = 1)
  {
    comp_t start;
    bool open = false, last, result_fatal = false;
    int failed = -1;
    {
      std::lock_guard<std::mutex> lock(mu);
      keep(r);
      if (part == kGraph) {
        g_running = false;
        open = b_gated;
        if (result.errorcode == errorcode_t::fatal_peer_failure)
          failed = result.rank;
        else if (result.errorcode != errorcode_t::done)
          failed = shm_op_t::kFailedOther;
      } else if (part == kBefore) {
        result_fatal = result.errorcode == errorcode_t::fatal;
        a_pending = false;
        if (g_ready) std::swap(start, graph);
        g_running = !start.is_empty();
      }
    }
    if (open) b.open_gate(failed);
    // the node's part is missing: the other representatives must not
    // get a result without it (a peer failure stops G's posts instead)
    if (!start.is_empty() && result_fatal)
      g_fin->state->poisoned.store(true, std::memory_order_release);
    if (!start.is_empty()) graph_start(start);
    {
      std::lock_guard<std::mutex> lock(mu);
      parts -= ended;
      last = parts == 0;
    }
    if (last) end();
  }
  // the setup ended (G built or none): G starts now if A ended already
  void ready(comp_t g)
  {
    bool no_graph = g.is_empty();
    comp_t start;
    bool result_fatal;
    {
      std::lock_guard<std::mutex> lock(mu);
      graph = g;
      g_ready = true;
      if (!a_pending) std::swap(start, graph);
      g_running = !start.is_empty();
      result_fatal = result.errorcode == errorcode_t::fatal;
    }
    // A ended already (a team that had stopped finishes it at once)
    if (!start.is_empty() && result_fatal)
      g_fin->state->poisoned.store(true, std::memory_order_release);
    if (!start.is_empty()) graph_start(start);
    // one call: the last part's end frees this object
    if (no_graph)
      part_done(shm_result_t(), kGraph, 2);
    else
      part_done(shm_result_t(), kSetup);
  }
  // A stage dropped by the team's destructor (its runtime is being freed):
  // the collective never ends and signals nothing. An unstarted G is
  // freed with it; the object goes once no part is left. A G that is
  // running when its runtime goes never ends: it stays allocated, with
  // this object, as any point-to-point collective's graph does then.
  void part_abandoned()
  {
    comp_t unstarted;
    finisher_t* fin = nullptr;
    bool last;
    {
      std::lock_guard<std::mutex> lock(mu);
      abandoned = true;
      a_pending = false;
      --parts;
      if (!graph.is_empty()) {
        std::swap(unstarted, graph);
        fin = g_fin;
        --parts;
      }
      last = parts == 0;
    }
    if (!unstarted.is_empty()) {
      free_comp(&unstarted);
      delete fin;
    }
    if (last && !blocking) finish_async(this);
  }
  // A blocking representative whose progress call raised an error that is
  // not a peer failure (a receive of G refused a larger message than it
  // expected, so G never ends): it stops waiting for G, whose state stays
  // allocated (the network may still write into G's buffers) with this
  // object, and publishes its last stage without data, so that the ranks
  // of its node end with an error too. Returns false when G is not
  // running (the error is not G's).
  bool give_up_graph()
  {
    bool open, last;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!g_running || g_given_up.load(std::memory_order_relaxed))
        return false;
      g_running = false;
      g_given_up.store(true, std::memory_order_release);
      open = b_gated;
      last = --parts == 0;
    }
    if (open) b.open_gate(shm_op_t::kFailedOther);
    if (last) end();
    return true;
  }
  void end()
  {
    if (blocking) {
      done.store(true, std::memory_order_release);
      return;
    }
    finish_async(this);
  }
  // Out of line: inlined into run_hier, the compiler cannot tell that a
  // blocking call never takes this branch and warns of a use after free.
  [[gnu::noinline]] static void finish_async(hier_t* h)
  {
    std::unique_ptr<hier_t> self(h);
    if (h->abandoned) return;  // its runtime is gone: nothing to signal
    status_t s = ended_status(h->status, h->result);
    comp_t c = h->comp;
    self.reset();
    c.p_impl->signal(s);
  }
};

void coll_t::begin_hier(const shm_request_t* before, const shm_request_t* after,
                        const std::vector<int>* reps)
{
  shm_team_t* t = team();
  t->count_hierarchical();
  auto* h = new hier_t();
  hier_ = h;
  h->team = t;
  h->parts += 1 + (before ? 1 : 0) + (after ? 1 : 0);
  if (reps) {
    peers_ = *reps;
    rank = static_cast<int>(std::find(reps->begin(), reps->end(), rank) -
                            reps->begin());
    nranks = static_cast<int>(reps->size());
    h->b_gated = after != nullptr;
  }
  if (before) {
    h->a_pending = true;
    t->start(&h->a, *before);
  }
  if (after) {
    if (h->b_gated) h->b.close_gate();
    t->start(&h->b, *after);
  }
}

void coll_t::run_hier(void* buffer, size_t size)
{
  hier_t* h = hier_;
  hier_ = nullptr;
  h->comp = comp_;
  h->status = status_t(errorcode_t::done);
  h->status.rank = call_.rank;
  h->status.buffer = buffer;
  h->status.size = size;
  h->status.user_context = user_context_;
  h->blocking = comp_.is_empty();
  comp_t g;
  if (!graph_.is_empty()) {
    fin_->comp = comp_t(&h->g_done);
    fin_->error_out = &h->graph_error;
    fin_->status = status_t(errorcode_t::done);
    h->g_fin = fin_;
    g = graph_;
    graph_ = comp_t();  // the finisher owns it
  }
  shm_team_t* t = team();
  if (!h->blocking) {
    h->ready(g);
    t->poll();  // stages that need no peer go at once
    return;
  }
  std::unique_ptr<hier_t> own(h);
  std::exception_ptr raised;
  try {
    h->ready(g);
  } catch (...) {
    raised = std::current_exception();
  }
  // as a node-local blocking call: an error raised meanwhile is kept until
  // every part ended (they use the caller's buffers)
  const bool keep = keeps_core(t);
  while (!h->done.load(std::memory_order_acquire)) {
    try {
      if (keep) util::idle_keep_core();
      t->poll();
      progress_x().device(call_.device)();
    } catch (const peer_failure_error&) {
      // G ends with the failure too (the sweep withdraws its receives)
      if (!raised) raised = std::current_exception();
    } catch (...) {
      if (!raised) raised = std::current_exception();
      // G may never end: h stays with it (give_up_graph)
      if (h->give_up_graph()) own.release();
    }
  }
  // the error that made this rank give G up comes first: its own stage's
  // error only says that G failed
  if (h->g_given_up.load(std::memory_order_relaxed))
    std::rethrow_exception(raised);
  const shm_result_t& r = h->result;
  if (r.errorcode == errorcode_t::fatal_peer_failure)
    throw peer_failure_error(r.error, r.rank);
  if (r.errorcode != errorcode_t::done) throw fatal_error(r.error);
  if (raised) std::rethrow_exception(raised);
}

// ---- building blocks ------------------------------------------------------

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

namespace
{

// The ring both phases share: at step s a rank sends block
// (rank - s + shift) of buf to its right neighbour and receives block
// (rank - s - 1 + shift) from its left one into into(s, block), steps
// base..base + n - 2. then(s, block, got, prev) adds what follows the
// receive and returns the node the next step's send waits for. Returns a
// node that completes when every send and every step did.
template <typename Into, typename Then>
graph_node_t ring_steps(coll_t& c, char* buf, size_t count, size_t item_size,
                        int shift, uint64_t base, graph_node_t after, Into into,
                        Then then)
{
  int me = c.rank, n = c.nranks;
  int right = mod(me + 1, n), left = mod(me - 1, n);
  graph_node_t prev = after, done = c.join();
  c.edge(after, done);
  for (int s = 0; s < n - 1; ++s) {
    block_t sb = block_of(count, n, mod(me - s + shift, n));
    block_t rb = block_of(count, n, mod(me - s - 1 + shift, n));
    graph_node_t snd =
        c.send(right, buf + sb.off * item_size, sb.len * item_size, base + s);
    c.edge(prev, snd);
    c.edge(snd, done);
    graph_node_t got = c.recv(left, into(s, rb), rb.len * item_size, base + s);
    c.edge(after, got);
    prev = then(s, rb, got, prev);
    c.edge(prev, done);
  }
  return done;
}

}  // namespace

// A received block goes to scratch and is added into acc's block, which
// the next step sends on.
graph_node_t ring_reduce_scatter(coll_t& c, char* acc, size_t count,
                                 size_t item_size, reduce_op_t op, int shift,
                                 uint64_t base, graph_node_t after)
{
  size_t max_block = block_of(count, c.nranks, 0).len * item_size;
  char* tmp = c.scratch(max_block * (c.nranks - 1));
  return ring_steps(
      c, acc, count, item_size, shift, base, after,
      [&](int s, block_t) { return tmp + s * max_block; },
      [&](int s, block_t rb, graph_node_t got, graph_node_t prev) {
        char* dst = acc + rb.off * item_size;
        graph_node_t red = c.reduce(op, dst, rb.len, rb.len * item_size,
                                    {dst, tmp + s * max_block});
        c.edge(prev, red);
        c.edge(got, red);
        return red;
      });
}

// A received block lands in place and is the next step's send.
graph_node_t ring_allgather(coll_t& c, char* buf, size_t count,
                            size_t item_size, int shift, uint64_t base,
                            graph_node_t after)
{
  return ring_steps(
      c, buf, count, item_size, shift, base, after,
      [&](int, block_t rb) { return buf + rb.off * item_size; },
      [](int, block_t, graph_node_t got, graph_node_t) { return got; });
}

}  // namespace lci::coll
