// Completion graph (paper 3.2.5, 4.1.4): a set of nodes with a partial
// order; a node runs when all its predecessors have completed.
//
// A graph is a completion object (graph_impl_t). A node holds its function,
// value, out-edges and an atomic counter of the predecessors still pending
// in the current run. graph_start resets every counter and fires the
// sources: the successors of GRAPH_START and the nodes with no predecessor.
// Firing a node runs fn(value):
//   done    the node is complete now (the returned status goes to its edges);
//   posted  the node completes when the graph is signalled with
//           status.user_context == the node (a communication posted with the
//           graph as its completion object and the node as user_context), or
//           by graph_node_mark_complete;
//   retry   the node is put on the graph's retry list and fired again by the
//           next graph_test, or the next signal of the graph, whichever
//           comes first; a user who only waits on the graph's completion
//           object must therefore call graph_test now and then.
// A completed node runs its edge callbacks fn(status, src value, dst value)
// and decrements its successors, firing those that reach zero. When every
// node completed, graph_test returns done (until the next graph_start) and
// the completion object given to alloc_graph, if any, is signalled with
// status done and user_context = the graph's comp_impl_t*. A node that
// completed with a failure (an error code from fatal on: a posted
// operation toward a failed peer, or graph_node_mark_complete with such a
// status) still counts as complete and still runs its edges, but the run
// then ends with the first such error code instead of done, in graph_test
// and in the signal, so a program that only waits on the graph sees it.
//
// Work is done on the thread that starts the graph, signals it or tests it,
// through a per-thread work list (no recursion: long chains and nested
// graphs use constant stack). Counters are atomic: nodes may complete on
// several threads at once.
//
// Thread safety: building (add_node, add_edge) must not race with a run of
// the same graph; start again only after the previous run completed (a
// start during a run is a fatal error). Signals and graph_test are
// any-thread. Allocation happens only while building.
#ifndef LCI_COMP_GRAPH_HPP
#define LCI_COMP_GRAPH_HPP

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "lci.hpp"

namespace lci
{

class graph_impl_t;

struct graph_edge_t {
  struct graph_node_impl_t* dst;  // null: GRAPH_END
  graph_edge_run_cb_t fn;         // may be null
};

struct graph_node_impl_t {
  enum state_t : int { kIdle, kFired, kComplete };

  graph_impl_t* graph = nullptr;
  graph_node_run_cb_t fn = nullptr;  // null: completes at once
  void* value = nullptr;
  graph_node_free_cb_t free_cb = nullptr;
  std::vector<graph_edge_t> out;
  int npred = 0;  // predecessors, GRAPH_START included
  alignas(64) std::atomic<int> pending{0};
  std::atomic<int> state{kIdle};
  graph_node_impl_t* retry_next = nullptr;  // retry list link
};

class graph_impl_t final : public comp_impl_t
{
 public:
  explicit graph_impl_t(comp_t comp);
  ~graph_impl_t() override;

  // status.user_context is the node that completed
  void signal(status_t status) override;

  graph_node_impl_t* add_node(graph_node_run_cb_t fn, void* value,
                              graph_node_free_cb_t free_cb);
  void add_edge(graph_node_t src, graph_node_t dst, graph_edge_run_cb_t fn);
  void start();
  status_t test();
  // a posted node completed (by a signal or by hand)
  void complete(graph_node_impl_t* node, status_t status, const char* call);

  // the node behind a handle; throws if it is not a node of a graph
  static graph_node_impl_t* node_of(graph_node_t node, const char* call);

 private:
  friend struct graph_runner_t;
  bool running() const;
  // a run completed: signal comp (a copy of comp_: the graph may be gone)
  static void finish(comp_t comp, graph_impl_t* graph, errorcode_t code);
  // the run's outcome from a value of remaining_ whose count is 0
  static errorcode_t outcome(uint64_t remaining);
  void push_retry(graph_node_impl_t* node);
  void flush_retries();

  comp_t comp_;  // signalled when a run completes (may be empty)
  std::mutex build_mu_;
  std::vector<graph_node_impl_t*> nodes_;
  std::vector<graph_node_impl_t*> sources_;  // no predecessor at all
  bool sources_dirty_ = false;
  graph_node_impl_t start_node_;  // GRAPH_START
  // Nodes left in this run (low 32 bits) and the run's first failure
  // (errorcode_t + 1 above them, 0: none): one word, so that the thread
  // completing the last node learns the failure from its own update,
  // after which another thread may already restart or free the graph.
  static constexpr uint64_t kCountMask = 0xffffffffu;
  alignas(64) std::atomic<uint64_t> remaining_{0};
  std::atomic<bool> ever_started_{false};
  alignas(64) std::atomic<graph_node_impl_t*> retry_head_{nullptr};
};

}  // namespace lci

#endif  // LCI_COMP_GRAPH_HPP
