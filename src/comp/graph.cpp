// Completion graph: see graph.hpp.
#include "comp/graph.hpp"

#include "resource/globals.hpp"
#include "util/error.hpp"

namespace lci
{

// The per-thread work list that runs node functions and completions without
// recursion: the outermost call on a thread drains it, nested calls (a node
// function that signals a graph, a graph whose completion object is another
// graph) only append to it.
struct graph_runner_t {
  struct work_t {
    graph_node_impl_t* node;
    status_t status;
    bool fire;  // true: run the node's function; false: it completed
  };

  static graph_runner_t& get()
  {
    thread_local graph_runner_t runner;
    return runner;
  }

  void run(graph_node_impl_t* node, const status_t& status, bool to_fire)
  {
    q_.push_back(work_t{node, status, to_fire});
    if (active_) return;
    active_ = true;
    struct reset_t {
      graph_runner_t& r;
      ~reset_t()
      {
        r.active_ = false;
        r.q_.clear();
        r.next_ = 0;
      }
    } reset{*this};
    while (next_ < q_.size()) {
      work_t w = q_[next_++];
      if (next_ == q_.size()) {  // keep the list short on long runs
        q_.clear();
        next_ = 0;
      }
      if (w.fire)
        fire(w.node);
      else
        completed(w.node, w.status);
    }
  }

 private:
  void push(graph_node_impl_t* node, const status_t& status, bool to_fire)
  {
    q_.push_back(work_t{node, status, to_fire});
  }

  void fire(graph_node_impl_t* node)
  {
    node->state.store(graph_node_impl_t::kFired, std::memory_order_release);
    status_t s = node->fn ? node->fn(node->value) : status_t(errorcode_t::done);
    if (s.is_done()) {
      push(node, s, false);
    } else if (s.is_posted()) {
      // completes when the graph is signalled with user_context == node
    } else if (s.is_retry()) {
      node->graph->push_retry(node);
    } else {
      util::throw_fatal("graph: node ", static_cast<void*>(node), " returned ",
                        s.error.get_str(), " (expected done, posted or retry)");
    }
  }

  void completed(graph_node_impl_t* node, const status_t& s)
  {
    int expected = graph_node_impl_t::kFired;
    if (!node->state.compare_exchange_strong(
            expected, graph_node_impl_t::kComplete, std::memory_order_acq_rel))
      util::throw_fatal("graph: node ", static_cast<void*>(node),
                        expected == graph_node_impl_t::kComplete
                            ? " completed twice in one run"
                            : " completed before it ran");
    graph_impl_t* g = node->graph;
    for (const graph_edge_t& e : node->out) {
      if (e.fn) e.fn(s, node->value, e.dst ? e.dst->value : nullptr);
      if (e.dst && e.dst->pending.fetch_sub(1, std::memory_order_acq_rel) == 1)
        push(e.dst, status_t(), true);
    }
    if (node == &g->start_node_) {
      for (graph_node_impl_t* n : g->sources_) push(n, status_t(), true);
      return;
    }
    // Once the count reaches zero the user may restart or free the graph:
    // touch nothing of it afterwards.
    comp_t comp = g->comp_;
    uint64_t now;
    if (s.error.errorcode >= errorcode_t::fatal) {
      uint64_t old = g->remaining_.load(std::memory_order_relaxed);
      do {
        now = old - 1;
        if ((old >> 32) == 0)
          now |= static_cast<uint64_t>(static_cast<int>(s.error.errorcode) + 1)
                 << 32;
      } while (!g->remaining_.compare_exchange_weak(
          old, now, std::memory_order_acq_rel, std::memory_order_relaxed));
    } else {
      now = g->remaining_.fetch_sub(1, std::memory_order_acq_rel) - 1;
    }
    if ((now & graph_impl_t::kCountMask) == 0)
      graph_impl_t::finish(comp, g, graph_impl_t::outcome(now));
  }

  bool active_ = false;
  std::vector<work_t> q_;
  size_t next_ = 0;
};

graph_impl_t::graph_impl_t(comp_t comp) : comp_(comp)
{
  start_node_.graph = this;
}

graph_impl_t::~graph_impl_t()
{
  for (graph_node_impl_t* n : nodes_) {
    globals::graph_nodes().remove(n, "free_comp", "graph node");
    if (n->free_cb) n->free_cb(n->value);
    delete n;
  }
}

graph_node_impl_t* graph_impl_t::node_of(graph_node_t node, const char* call)
{
  if (node == nullptr) util::throw_fatal(call, ": null graph node");
  if (node == GRAPH_START || node == GRAPH_END)
    util::throw_fatal(call, ": ",
                      node == GRAPH_START ? "GRAPH_START" : "GRAPH_END",
                      " is not a node that can be used here");
  // a node of a freed graph, or any other pointer, is not dereferenced
  globals::graph_nodes().check(node, call, "graph node");
  return static_cast<graph_node_impl_t*>(node);
}

bool graph_impl_t::running() const
{
  return ever_started_.load(std::memory_order_acquire) &&
         (remaining_.load(std::memory_order_acquire) & kCountMask) != 0;
}

errorcode_t graph_impl_t::outcome(uint64_t remaining)
{
  const uint64_t failure = remaining >> 32;
  return failure ? static_cast<errorcode_t>(failure - 1) : errorcode_t::done;
}

graph_node_impl_t* graph_impl_t::add_node(graph_node_run_cb_t fn, void* value,
                                          graph_node_free_cb_t free_cb)
{
  std::lock_guard<std::mutex> g(build_mu_);
  if (running()) util::throw_fatal("graph_add_node: the graph is running");
  graph_node_impl_t* n = new graph_node_impl_t;
  n->graph = this;
  n->fn = fn;
  n->value = value;
  n->free_cb = free_cb;
  try {
    nodes_.push_back(n);
    globals::graph_nodes().add(n);
  } catch (...) {
    delete n;
    throw;
  }
  sources_dirty_ = true;
  return n;
}

void graph_impl_t::add_edge(graph_node_t src, graph_node_t dst,
                            graph_edge_run_cb_t fn)
{
  const char* call = "graph_add_edge";
  std::lock_guard<std::mutex> g(build_mu_);
  if (running()) util::throw_fatal(call, ": the graph is running");
  if (src == GRAPH_END) util::throw_fatal(call, ": GRAPH_END as a source");
  if (dst == GRAPH_START)
    util::throw_fatal(call, ": GRAPH_START as a destination");
  if (src == GRAPH_START && dst == GRAPH_END)
    util::throw_fatal(call, ": an edge from GRAPH_START to GRAPH_END");
  graph_node_impl_t* s = src == GRAPH_START ? &start_node_ : node_of(src, call);
  graph_node_impl_t* d = dst == GRAPH_END ? nullptr : node_of(dst, call);
  if (s->graph != this || (d && d->graph != this))
    util::throw_fatal(call, ": node ", s->graph != this ? src : dst,
                      " belongs to another graph");
  if (s == d)
    util::throw_fatal(call, ": an edge from node ", src, " to itself");
  s->out.push_back(graph_edge_t{d, fn});
  if (d) ++d->npred;
  sources_dirty_ = true;
}

void graph_impl_t::start()
{
  {
    std::lock_guard<std::mutex> g(build_mu_);
    if (running())
      util::throw_fatal(
          "graph_start: the graph is still running (start it "
          "again only after graph_test returned done)");
    if (sources_dirty_) {
      sources_.clear();
      for (graph_node_impl_t* n : nodes_)
        if (n->npred == 0) sources_.push_back(n);
      sources_dirty_ = false;
    }
    for (graph_node_impl_t* n : nodes_) {
      n->pending.store(n->npred, std::memory_order_relaxed);
      n->state.store(graph_node_impl_t::kIdle, std::memory_order_relaxed);
    }
    start_node_.state.store(graph_node_impl_t::kFired,
                            std::memory_order_relaxed);
    remaining_.store(nodes_.size(), std::memory_order_release);
    ever_started_.store(true, std::memory_order_release);
  }
  if (nodes_.empty()) {
    finish(comp_, this, errorcode_t::done);
    return;
  }
  graph_runner_t::get().run(&start_node_, status_t(errorcode_t::done), false);
}

status_t graph_impl_t::test()
{
  if (retry_head_.load(std::memory_order_acquire)) flush_retries();
  if (!ever_started_.load(std::memory_order_acquire))
    return status_t(errorcode_t::retry);
  const uint64_t r = remaining_.load(std::memory_order_acquire);
  if ((r & kCountMask) != 0) return status_t(errorcode_t::retry);
  return status_t(outcome(r));
}

void graph_impl_t::signal(status_t status)
{
  graph_node_impl_t* node =
      static_cast<graph_node_impl_t*>(status.user_context);
  if (node == nullptr || node == GRAPH_START || node == GRAPH_END ||
      node->graph != this)
    util::throw_fatal("graph ", static_cast<void*>(this),
                      ": signalled with user_context ", status.user_context,
                      ", which is not one of its nodes");
  // retries first: once the node's completion is processed the graph may be
  // complete, and then restarted or freed by another thread
  if (retry_head_.load(std::memory_order_relaxed)) flush_retries();
  graph_runner_t::get().run(node, status, false);
}

void graph_impl_t::complete(graph_node_impl_t* node, status_t status,
                            const char* call)
{
  if (node->graph != this || node == &start_node_)
    util::throw_fatal(call, ": ", static_cast<void*>(node),
                      " is not a graph node");
  graph_runner_t::get().run(node, status, false);
}

void graph_impl_t::finish(comp_t comp, graph_impl_t* graph, errorcode_t code)
{
  if (comp.is_empty() || comp == COMP_NULL_RETRY) return;
  status_t s(code);
  s.user_context = static_cast<comp_impl_t*>(graph);
  comp.p_impl->signal(s);
}

void graph_impl_t::push_retry(graph_node_impl_t* node)
{
  graph_node_impl_t* head = retry_head_.load(std::memory_order_relaxed);
  do {
    node->retry_next = head;
  } while (!retry_head_.compare_exchange_weak(
      head, node, std::memory_order_release, std::memory_order_relaxed));
}

void graph_impl_t::flush_retries()
{
  graph_node_impl_t* list =
      retry_head_.exchange(nullptr, std::memory_order_acquire);
  // the list is newest first: reverse it to retry in order
  graph_node_impl_t* ordered = nullptr;
  while (list) {
    graph_node_impl_t* next = list->retry_next;
    list->retry_next = ordered;
    ordered = list;
    list = next;
  }
  graph_runner_t& runner = graph_runner_t::get();
  while (ordered) {
    graph_node_impl_t* next = ordered->retry_next;  // fire may re-queue it
    runner.run(ordered, status_t(), true);
    ordered = next;
  }
}

}  // namespace lci
