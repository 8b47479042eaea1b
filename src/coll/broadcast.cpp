// broadcast (docs/COLLECTIVES.md): the node-local team when it serves the
// call, else direct sends from the root (few ranks), a binomial tree, or a
// pipelined chain (large buffers).
#include "coll/coll_graph.hpp"
#include "util/error.hpp"

namespace lci
{
namespace
{
using namespace coll;

void bcast_direct(coll_t& c, void* buf, size_t size, int root)
{
  if (c.rank != root) {
    c.recv(root, buf, size, 0);
    return;
  }
  for (int j = 0; j < c.nranks; ++j)
    if (j != root) c.send(j, buf, size, 0);
}

// Binomial tree rooted at root: a rank receives from its parent, then
// sends to its children, largest subtree first.
void bcast_tree(coll_t& c, void* buf, size_t size, int root)
{
  int n = c.nranks, r = mod(c.rank - root, n);
  graph_node_t got = nullptr;
  int mask = 1;
  for (; mask < n; mask <<= 1) {
    if (r & mask) {
      got = c.recv(mod(r - mask + root, n), buf, size, 0);
      break;
    }
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (r + mask >= n) continue;
    c.edge(got, c.send(mod(r + mask + root, n), buf, size, 0));
  }
}

// A chain root -> root + 1 -> ... cut into chunks that are forwarded as
// soon as they arrive (a pipeline: large buffers).
void bcast_ring(coll_t& c, void* buf, size_t size, int root)
{
  int n = c.nranks, r = mod(c.rank - root, n);
  size_t nchunks = std::max<size_t>(1, (size + kRingChunk - 1) / kRingChunk);
  for (size_t i = 0; i < nchunks; ++i) {
    size_t off = i * kRingChunk;
    size_t len = std::min(kRingChunk, size - std::min(size, off));
    char* p = static_cast<char*>(buf) + (len ? off : 0);
    graph_node_t got = nullptr;
    if (r > 0) got = c.recv(mod(c.rank - 1, n), p, len, i);
    if (r < n - 1) c.edge(got, c.send(mod(c.rank + 1, n), p, len, i));
  }
}

}  // namespace

const char* get_broadcast_algorithm_str(broadcast_algorithm_t algorithm)
{
  static const char* const names[] = {"none", "direct", "tree", "ring"};
  unsigned i = static_cast<unsigned>(algorithm);
  return i < 4 ? names[i] : "unknown";
}

void broadcast_x::call_impl(void* buffer, size_t size, int root,
                            runtime_t runtime, device_t device,
                            matching_engine_t matching_engine, comp_t comp,
                            void* user_context, broadcast_algorithm_t algorithm)
{
  coll_t c("broadcast", shm_kind_t::broadcast, runtime, device, matching_engine,
           comp, user_context);
  c.check_root(root);
  c.check_size(size, 1);
  c.check_buffer(buffer, size, "buffer");
  c.check_algorithm(static_cast<int>(algorithm),
                    static_cast<int>(broadcast_algorithm_t::ring));
  shm_request_t req = c.request(buffer, buffer);
  req.size = size;
  req.root = root;
  if (c.run_local(req, algorithm == broadcast_algorithm_t::none, buffer, size))
    return;
  int n = c.nranks;
  if (algorithm == broadcast_algorithm_t::none)
    algorithm = n <= 3                      ? broadcast_algorithm_t::direct
                : size >= (size_t(1) << 20) ? broadcast_algorithm_t::ring
                                            : broadcast_algorithm_t::tree;
  switch (algorithm) {
    case broadcast_algorithm_t::direct:
      bcast_direct(c, buffer, size, root);
      break;
    case broadcast_algorithm_t::tree:
      bcast_tree(c, buffer, size, root);
      break;
    case broadcast_algorithm_t::ring:
      bcast_ring(c, buffer, size, root);
      break;
    default:
      util::throw_fatal("broadcast: unknown algorithm ",
                        static_cast<int>(algorithm));
  }
  c.run(buffer, size);
}

}  // namespace lci
