// A nonblocking barrier built with a completion graph: the dissemination
// algorithm, where in round k every rank sends to rank + 2^k and receives
// from rank - 2^k (mod n), and round k + 1 starts once round k's receive
// is complete. Each send and receive is a node of the graph
// (graph_add_node_op); edges order the rounds. The program starts the
// graph, keeps computing while polling graph_test, and checks that no rank
// left the barrier before every rank entered it: each rank writes how many
// barriers it has entered into every rank's memory (a put) before it
// enters, so past the barrier every count must have reached this one.
//
//   lcrun -n 4 ./graph_barrier [--repeat N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <lci.hpp>
#include <thread>
#include <vector>

namespace
{

// Builds the barrier's graph; `tokens` holds the bytes sent and received.
lci::comp_t build_barrier(std::vector<char>* tokens, lci::tag_t tag)
{
  const int rank = lci::get_rank_me(), n = lci::get_rank_n();
  lci::comp_t graph = lci::alloc_graph();
  lci::graph_node_t prev = lci::GRAPH_START;
  int rounds = 0;
  for (int d = 1; d < n; d *= 2) ++rounds;
  tokens->assign(2 * static_cast<size_t>(rounds), 0);
  int k = 0;
  for (int d = 1; d < n; d *= 2, ++k) {
    char* out = &(*tokens)[2 * k];
    char* in = &(*tokens)[2 * k + 1];
    lci::graph_node_t send = lci::graph_add_node_op(
        graph,
        lci::post_send_x((rank + d) % n, out, 1, tag + k, lci::COMP_NULL));
    lci::graph_node_t recv = lci::graph_add_node_op(
        graph,
        lci::post_recv_x((rank - d + n) % n, in, 1, tag + k, lci::COMP_NULL));
    // round k starts after round k - 1's receive; the barrier ends after
    // every send and the last receive
    lci::graph_add_edge(graph, prev, send);
    lci::graph_add_edge(graph, prev, recv);
    lci::graph_add_edge(graph, send, lci::GRAPH_END);
    prev = recv;
  }
  if (prev == lci::GRAPH_START) {
    // one rank: nothing to exchange, a node that completes at once
    prev = lci::graph_add_node(
        graph, [](void*) { return lci::status_t(lci::errorcode_t::done); });
    lci::graph_add_edge(graph, lci::GRAPH_START, prev);
  }
  lci::graph_add_edge(graph, prev, lci::GRAPH_END);
  return graph;
}

}  // namespace

int main(int argc, char** argv)
{
  int repeat = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: graph_barrier [--repeat N]\n");
      return 2;
    }
  }
  lci::g_runtime_init();
  const int rank = lci::get_rank_me(), n = lci::get_rank_n();
  // entered[r]: how many barriers rank r has entered, written by rank r
  // with a put into every rank's array before it enters
  std::vector<int> entered(n, 0);
  lci::mr_t mr = lci::register_memory(entered.data(), n * sizeof(int));
  lci::rmr_t my_rmr = lci::get_rmr(mr);
  std::vector<lci::rmr_t> rmrs(n);
  lci::allgather(&my_rmr, rmrs.data(), sizeof(lci::rmr_t));
  int errors = 0;
  long work = 0;
  for (int it = 1; it <= repeat; ++it) {
    // one rank per round comes late
    if (rank == it % n)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (int peer = 0; peer < n; ++peer) {
      lci::status_t s;
      do {
        // network semantic: the call returns once the value is at the peer
        s = lci::post_put_x(peer, &it, sizeof(int), lci::COMP_NULL,
                            rank * sizeof(int), rmrs[peer])
                .comp_semantic(lci::comp_semantic_t::network)();
        if (s.is_retry()) lci::progress();
      } while (s.is_retry());
    }
    std::vector<char> tokens;
    lci::comp_t graph = build_barrier(&tokens, 1000 + 64 * (it % 16));
    lci::graph_start(graph);
    lci::status_t done;
    while ((done = lci::graph_test(graph)).is_retry()) {
      ++work;  // the computation this barrier overlaps
      lci::progress();
    }
    // a run ends with the first failure of its operations, if any
    if (!done.is_done()) {
      std::fprintf(stderr, "graph_barrier: rank %d: barrier %d failed: %s\n",
                   rank, it, done.error.get_str());
      return 1;
    }
    lci::free_comp(&graph);
    // past the barrier: every rank has entered it, so every rank's count
    // has reached `it` here
    for (int r = 0; r < n; ++r)
      if (__atomic_load_n(&entered[r], __ATOMIC_ACQUIRE) < it) ++errors;
  }
  lci::barrier();  // nobody writes into `entered` any more
  lci::deregister_memory(&mr);
  std::printf(
      "graph_barrier: rank %d of %d: %d barriers, %d left early, "
      "%ld polls overlapped\n",
      rank, n, repeat, errors, work);
  lci::g_runtime_fina();
  return errors == 0 ? 0 : 1;
}
