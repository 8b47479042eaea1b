// broadcast (docs/COLLECTIVES.md): the node-local team when it serves the
// call; across nodes, hierarchically (the root and the other nodes'
// leaders point to point, then each of them to its node through the
// segment); else direct sends from the root (few ranks), a binomial tree,
// or a pipelined chain (large buffers).
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

// The library's choice among the point-to-point algorithms for n ranks.
broadcast_algorithm_t default_broadcast(int n, size_t size)
{
  return n <= 3                      ? broadcast_algorithm_t::direct
         : size >= (size_t(1) << 20) ? broadcast_algorithm_t::ring
                                     : broadcast_algorithm_t::tree;
}

void bcast_run(coll_t& c, broadcast_algorithm_t algorithm, void* buffer,
               size_t size, int root)
{
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
}

// The representatives: the root for its node, the leader for the others;
// they broadcast point to point, then each to its node through the
// segment (the root's node included).
void bcast_hier(coll_t& c, shm_team_t* t, void* buffer, size_t size, int root)
{
  const int root_node = t->node_of(root);
  const std::vector<int>& members = t->members();
  const int rep = t->node_of(c.rank) == root_node ? root : members[0];
  std::vector<int> reps = t->leaders();
  reps[static_cast<size_t>(root_node)] = root;
  const bool is_rep = c.rank == rep;
  shm_request_t spread = c.request(buffer, buffer);
  spread.size = size;
  spread.root = static_cast<int>(
      std::find(members.begin(), members.end(), rep) - members.begin());
  c.begin_hier(nullptr, &spread, is_rep ? &reps : nullptr);
  if (is_rep)
    bcast_run(c, default_broadcast(c.nranks, size), buffer, size, root_node);
  c.run_hier(buffer, size);
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
                            void* user_context, endpoint_t endpoint,
                            broadcast_algorithm_t algorithm)
{
  coll_t c("broadcast", shm_kind_t::broadcast, runtime, device, matching_engine,
           comp, user_context, endpoint);
  c.check_root(root);
  c.check_size(size, 1);
  c.check_buffer(buffer, size, "buffer");
  c.check_algorithm(static_cast<int>(algorithm),
                    static_cast<int>(broadcast_algorithm_t::ring));
  shm_request_t req = c.request(buffer, buffer);
  req.size = size;
  req.root = root;
  const bool by_library = algorithm == broadcast_algorithm_t::none;
  if (c.run_local(req, by_library, buffer, size)) return;
  if (shm_team_t* t = c.hier_team(by_library)) {
    bcast_hier(c, t, buffer, size, root);
    return;
  }
  if (by_library) algorithm = default_broadcast(c.nranks, size);
  bcast_run(c, algorithm, buffer, size, root);
  c.run(buffer, size);
}

}  // namespace lci
