// reduce_scatter (docs/COLLECTIVES.md): the node-local team when it serves
// the call, else direct exchange of blocks, a ring, or a binomial reduce to
// rank 0 followed by a scatter ("tree").
#include "coll/coll_graph.hpp"
#include "util/error.hpp"

namespace lci
{
using namespace coll;

const char* get_reduce_scatter_algorithm_str(
    reduce_scatter_algorithm_t algorithm)
{
  static const char* const names[] = {"none", "direct", "tree", "ring"};
  unsigned i = static_cast<unsigned>(algorithm);
  return i < 4 ? names[i] : "unknown";
}

void reduce_scatter_x::call_impl(const void* sendbuf, void* recvbuf,
                                 size_t recvcount, size_t item_size,
                                 reduce_op_t op, runtime_t runtime,
                                 device_t device,
                                 matching_engine_t matching_engine, comp_t comp,
                                 void* user_context, endpoint_t endpoint,
                                 reduce_scatter_algorithm_t algorithm)
{
  coll_t c("reduce_scatter", shm_kind_t::reduce_scatter, runtime, device,
           matching_engine, comp, user_context, endpoint);
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
  switch (algorithm) {
    case reduce_scatter_algorithm_t::direct: {
      // recvbuf may be sendbuf or this rank's block of it: the reduction
      // runs once every send of sendbuf completed, and reads its sources
      // before it overwrites them (coll_t::reduce)
      std::vector<const void*> srcs(n);
      std::vector<graph_node_t> waits;
      waits.reserve(2 * (n - 1));
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
      break;
    }
    case reduce_scatter_algorithm_t::ring: {
      // the whole input is reduced in scratch, so recvbuf may alias it
      char* acc = c.scratch(bytes * n);
      graph_node_t cp = c.copy(sendbuf, acc, bytes * n);
      // shift -1: rank r ends with block r
      graph_node_t rs =
          ring_reduce_scatter(c, acc, recvcount * n, item_size, op, -1, 0, cp);
      c.edge(rs, c.copy(acc + me * bytes, recvbuf, bytes));
      break;
    }
    case reduce_scatter_algorithm_t::tree: {
      // binomial reduce of the whole buffer to rank 0 (into scratch, so
      // recvbuf may alias sendbuf), which then sends each rank its block
      char* acc = c.scratch(bytes * n);
      graph_node_t red = reduce_tree(c, sendbuf, acc, recvcount * n, bytes * n,
                                     op, 0, nullptr);
      if (me == 0) {
        for (int j = 1; j < n; ++j)
          c.edge(red, c.send(j, acc + j * bytes, bytes, kStepScatter));
        c.edge(red, c.copy(acc, recvbuf, bytes));
      } else {
        // after this rank's part of the reduction, whose first node
        // copies sendbuf (which recvbuf may alias)
        c.edge(red, c.recv(0, recvbuf, bytes, kStepScatter));
      }
      break;
    }
    default:
      util::throw_fatal("reduce_scatter: unknown algorithm ",
                        static_cast<int>(algorithm));
  }
  c.run(recvbuf, bytes);
}

}  // namespace lci
