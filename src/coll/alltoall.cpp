// alltoall (docs/COLLECTIVES.md): the node-local team when it serves the
// call, else every rank sends each other rank its block directly.
#include "coll/coll_graph.hpp"

namespace lci
{
using namespace coll;

void alltoall_x::call_impl(const void* sendbuf, void* recvbuf, size_t size,
                           runtime_t runtime, device_t device,
                           matching_engine_t matching_engine, comp_t comp,
                           void* user_context, endpoint_t endpoint,
                           comp_semantic_t comp_semantic)
{
  coll_t c("alltoall", shm_kind_t::alltoall, runtime, device, matching_engine,
           comp, user_context, endpoint);
  check_comp_semantic(comp_semantic, "alltoall");
  int me = c.rank, n = c.nranks;
  c.check_size(size, n);
  c.check_buffer(sendbuf, size * n, "sendbuf");
  c.check_buffer(recvbuf, size * n, "recvbuf");
  shm_request_t req = c.request(sendbuf, recvbuf);
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
