// allreduce (docs/COLLECTIVES.md): the node-local team when it serves the
// call, else direct exchange, recursive doubling ("tree") or a ring
// (reduce-scatter then allgather, for large buffers at 3 ranks and more).
#include "coll/coll_graph.hpp"
#include "util/error.hpp"

namespace lci
{
namespace
{
using namespace coll;

// Every rank sends its data to every other and reduces all of them in rank
// order (the same bytes everywhere).
void allreduce_direct(coll_t& c, const void* sendbuf, void* recvbuf,
                      size_t count, size_t bytes, reduce_op_t op)
{
  int me = c.rank, n = c.nranks;
  std::vector<const void*> srcs(n);
  std::vector<graph_node_t> waits;
  waits.reserve(2 * (n - 1));
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
}

// Recursive doubling over the largest power of two p <= n; the first
// 2 (n - p) ranks pair up first (even ranks hand their data to the odd
// neighbour and get the result back at the end). Partners combine as
// op(lower ranks, higher ranks), so every rank computes the same bytes.
void allreduce_rd(coll_t& c, const void* sendbuf, void* acc, size_t count,
                  size_t bytes, reduce_op_t op)
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
      c.edge(s, c.recv(me + 1, acc, bytes, kStepLast));
      return;
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
  if (me < 2 * rem) c.edge(prev, c.send(me - 1, acc, bytes, kStepLast));
}

// Ring allreduce: reduce-scatter then allgather (bandwidth-optimal).
void allreduce_ring(coll_t& c, const void* sendbuf, void* recvbuf, size_t count,
                    size_t item_size, reduce_op_t op)
{
  char* acc = static_cast<char*>(recvbuf);
  graph_node_t cp = c.copy(sendbuf, acc, count * item_size);
  graph_node_t rs = ring_reduce_scatter(c, acc, count, item_size, op, 0, 0, cp);
  ring_allgather(c, acc, count, item_size, 1, c.nranks - 1, rs);
}

}  // namespace

const char* get_allreduce_algorithm_str(allreduce_algorithm_t algorithm)
{
  static const char* const names[] = {"none", "direct", "tree", "ring"};
  unsigned i = static_cast<unsigned>(algorithm);
  return i < 4 ? names[i] : "unknown";
}

void allreduce_x::call_impl(const void* sendbuf, void* recvbuf, size_t count,
                            size_t item_size, reduce_op_t op, runtime_t runtime,
                            device_t device, matching_engine_t matching_engine,
                            comp_t comp, void* user_context,
                            allreduce_algorithm_t algorithm)
{
  coll_t c("allreduce", shm_kind_t::allreduce, runtime, device, matching_engine,
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
  c.run(recvbuf, bytes);
}

}  // namespace lci
