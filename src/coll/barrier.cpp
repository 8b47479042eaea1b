// barrier (docs/COLLECTIVES.md): the node-local team when it serves the
// call, else dissemination over point-to-point messages.
#include "coll/coll_graph.hpp"

namespace lci
{
namespace
{
using namespace coll;

// Dissemination: in round k send to rank + 2^k, receive from rank - 2^k;
// round k + 1 sends after round k's message arrived.
void barrier_dissemination(coll_t& c)
{
  int me = c.rank, n = c.nranks;
  graph_node_t prev = nullptr;
  uint64_t k = 0;
  for (int dist = 1; dist < n; dist <<= 1, ++k) {
    graph_node_t s = c.send(mod(me + dist, n), nullptr, 0, k);
    c.edge(prev, s);
    prev = c.recv(mod(me - dist, n), nullptr, 0, k);
  }
}

}  // namespace

void barrier_x::call_impl(runtime_t runtime, device_t device,
                          matching_engine_t matching_engine, comp_t comp,
                          void* user_context)
{
  coll_t c("barrier", shm_kind_t::barrier, runtime, device, matching_engine,
           comp, user_context);
  if (c.run_local(c.request(nullptr, nullptr), true, nullptr, 0)) return;
  barrier_dissemination(c);
  c.run(nullptr, 0);
}

}  // namespace lci
