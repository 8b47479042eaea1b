// allreduce (docs/COLLECTIVES.md): the node-local team when it serves the
// call; across nodes, hierarchically (a reduce to each node's leader
// through its segment, an allreduce among the leaders, a broadcast from
// each leader); else direct exchange, recursive doubling ("tree") or a
// ring (reduce-scatter then allgather, for large buffers at 3 ranks and
// more).
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

// The library's choice among the point-to-point algorithms for n ranks.
allreduce_algorithm_t default_allreduce(int n, size_t bytes, size_t count)
{
  return n > 2 && bytes >= (size_t(64) << 10) && count >= static_cast<size_t>(n)
             ? allreduce_algorithm_t::ring
             : allreduce_algorithm_t::tree;
}

// Ranks on several nodes: the node's ranks reduce into the leader's
// recvbuf through the segment, the leaders allreduce it in place, each
// leader broadcasts the result to its node (so every rank gets the
// leaders' bytes, which are the same everywhere). Returns false when the
// team does not take the node-local stages.
bool allreduce_hier(coll_t& c, shm_team_t* t, const void* sendbuf,
                    void* recvbuf, size_t count, size_t item_size,
                    reduce_op_t op)
{
  const bool leader = t->local_rank() == 0;
  const size_t bytes = count * item_size;
  shm_request_t gather =
      c.reduction(sendbuf, leader ? recvbuf : nullptr, count, item_size, op);
  gather.kind = shm_kind_t::reduce;
  shm_request_t spread = c.request(recvbuf, recvbuf);
  spread.kind = shm_kind_t::broadcast;
  spread.size = bytes;
  if (!t->accepts(gather)) return false;
  c.begin_hier(&gather, &spread, leader ? &t->leaders() : nullptr);
  if (leader) {
    if (default_allreduce(c.nranks, bytes, count) ==
        allreduce_algorithm_t::ring)
      allreduce_ring(c, recvbuf, recvbuf, count, item_size, op);
    else
      allreduce_rd(c, recvbuf, recvbuf, count, bytes, op);
  }
  c.run_hier(recvbuf, bytes);
  return true;
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
                            endpoint_t endpoint,
                            allreduce_algorithm_t algorithm)
{
  coll_t c("allreduce", shm_kind_t::allreduce, runtime, device, matching_engine,
           comp, user_context, endpoint);
  size_t bytes = c.check_items(count, item_size, 1, op);
  c.check_buffer(sendbuf, bytes, "sendbuf");
  c.check_buffer(recvbuf, bytes, "recvbuf");
  c.check_algorithm(static_cast<int>(algorithm),
                    static_cast<int>(allreduce_algorithm_t::ring));
  const bool by_library = algorithm == allreduce_algorithm_t::none;
  if (c.run_local(c.reduction(sendbuf, recvbuf, count, item_size, op),
                  by_library, recvbuf, bytes))
    return;
  if (shm_team_t* t = c.hier_team(by_library))
    if (allreduce_hier(c, t, sendbuf, recvbuf, count, item_size, op)) return;
  if (by_library) algorithm = default_allreduce(c.nranks, bytes, count);
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
