// barrier (docs/COLLECTIVES.md): the node-local team when it serves the
// call; across nodes, hierarchically (each node's leader hears from its
// ranks through the segment, the leaders run a dissemination barrier, each
// leader releases its node); else dissemination over point-to-point
// messages.
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
                          void* user_context, endpoint_t endpoint,
                          comp_semantic_t comp_semantic)
{
  coll_t c("barrier", shm_kind_t::barrier, runtime, device, matching_engine,
           comp, user_context, endpoint);
  check_comp_semantic(comp_semantic, "barrier");
  if (c.run_local(c.request(nullptr, nullptr), true, nullptr, 0)) return;
  if (shm_team_t* t = c.hier_team(true)) {
    // a reduce of nothing to the leader: it waits for every rank of its
    // node, the others go on; a broadcast of nothing from it
    shm_request_t gather = c.request(nullptr, nullptr);
    gather.kind = shm_kind_t::reduce;
    shm_request_t release = c.request(nullptr, nullptr);
    release.kind = shm_kind_t::broadcast;
    const bool leader = t->local_rank() == 0;
    c.begin_hier(&gather, &release, leader ? &t->leaders() : nullptr);
    if (leader) barrier_dissemination(c);
    c.run_hier(nullptr, 0);
    return;
  }
  barrier_dissemination(c);
  c.run(nullptr, 0);
}

}  // namespace lci
