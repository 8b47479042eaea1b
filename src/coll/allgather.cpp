// allgather (docs/COLLECTIVES.md): the node-local team when it serves the
// call, else direct exchange or a ring (coll_graph.hpp's ring_allgather).
#include "coll/coll_graph.hpp"
#include "util/error.hpp"

namespace lci
{
using namespace coll;

const char* get_allgather_algorithm_str(allgather_algorithm_t algorithm)
{
  static const char* const names[] = {"none", "direct", "ring"};
  unsigned i = static_cast<unsigned>(algorithm);
  return i < 3 ? names[i] : "unknown";
}

void allgather_x::call_impl(const void* sendbuf, void* recvbuf, size_t size,
                            runtime_t runtime, device_t device,
                            matching_engine_t matching_engine, comp_t comp,
                            void* user_context, endpoint_t endpoint,
                            allgather_algorithm_t algorithm)
{
  coll_t c("allgather", shm_kind_t::allgather, runtime, device, matching_engine,
           comp, user_context, endpoint);
  int me = c.rank, n = c.nranks;
  c.check_size(size, n);
  c.check_buffer(sendbuf, size, "sendbuf");
  c.check_buffer(recvbuf, size * n, "recvbuf");
  c.check_algorithm(static_cast<int>(algorithm),
                    static_cast<int>(allgather_algorithm_t::ring));
  shm_request_t req = c.request(sendbuf, recvbuf);
  req.size = size;
  if (c.run_local(req, algorithm == allgather_algorithm_t::none, recvbuf,
                  size * n))
    return;
  char* out = static_cast<char*>(recvbuf);
  if (algorithm == allgather_algorithm_t::none)
    algorithm = n > 2 && size * n >= (size_t(64) << 10)
                    ? allgather_algorithm_t::ring
                    : allgather_algorithm_t::direct;
  // sendbuf may be this rank's block of recvbuf (nothing to copy, and no
  // receive writes it); any other overlap with recvbuf is read into
  // scratch before a receive may overwrite it
  graph_node_t snap = nullptr;
  if (sendbuf != out + me * size && overlaps(sendbuf, size, out, size * n))
    sendbuf = c.snapshot(sendbuf, size, &snap);
  graph_node_t cp = c.copy(sendbuf, out + me * size, size);
  c.edge(snap, cp);
  switch (algorithm) {
    case allgather_algorithm_t::direct:
      for (int j = 0; j < n; ++j) {
        if (j == me) continue;
        c.edge(snap, c.send(j, sendbuf, size, 0));
        c.edge(snap, c.recv(j, out + j * size, size, 0));
      }
      break;
    case allgather_algorithm_t::ring:
      // blocks of `size` bytes: block_of(size * n, n, b) is block b
      ring_allgather(c, out, size * n, 1, 0, 0, cp);
      break;
    default:
      util::throw_fatal("allgather: unknown algorithm ",
                        static_cast<int>(algorithm));
  }
  c.run(recvbuf, size * n);
}

}  // namespace lci
