// reduce (docs/COLLECTIVES.md): the node-local team when it serves the
// call; across nodes, hierarchically (each node's ranks reduce to its
// representative through the segment, the representatives along a
// binomial tree); else a binomial tree (coll_graph.hpp's reduce_tree).
#include "coll/coll_graph.hpp"

namespace lci
{
using namespace coll;

namespace
{

// The representative of the root's node is the root, of the others their
// leader: the root's node needs no step after the tree. Returns false when
// the team does not take the node-local stage.
bool reduce_hier(coll_t& c, shm_team_t* t, const void* sendbuf, void* recvbuf,
                 size_t count, size_t item_size, reduce_op_t op, int root)
{
  const size_t bytes = count * item_size;
  const int root_node = t->node_of(root);
  const bool root_side = t->node_of(c.rank) == root_node;
  const std::vector<int>& members = t->members();
  const int rep = root_side ? root : members[0];
  std::vector<int> reps = t->leaders();
  reps[static_cast<size_t>(root_node)] = root;
  const bool is_rep = c.rank == rep;
  const bool is_root = c.rank == root;  // (begin_hier renumbers c.rank)
  // a representative other than the root gathers its node in scratch
  void* acc = is_root ? recvbuf : is_rep ? c.scratch(bytes) : nullptr;
  shm_request_t gather = c.reduction(sendbuf, acc, count, item_size, op);
  gather.root = static_cast<int>(
      std::find(members.begin(), members.end(), rep) - members.begin());
  if (!t->accepts(gather)) return false;
  c.begin_hier(&gather, nullptr, is_rep ? &reps : nullptr);
  if (is_rep) reduce_tree(c, acc, acc, count, bytes, op, root_node, nullptr);
  c.run_hier(is_root ? recvbuf : nullptr, is_root ? bytes : 0);
  return true;
}

}  // namespace

void reduce_x::call_impl(const void* sendbuf, void* recvbuf, size_t count,
                         size_t item_size, reduce_op_t op, int root,
                         runtime_t runtime, device_t device,
                         matching_engine_t matching_engine, comp_t comp,
                         void* user_context, endpoint_t endpoint)
{
  coll_t c("reduce", shm_kind_t::reduce, runtime, device, matching_engine, comp,
           user_context, endpoint);
  c.check_root(root);
  size_t bytes = c.check_items(count, item_size, 1, op);
  c.check_buffer(sendbuf, bytes, "sendbuf");
  const bool is_root = c.rank == root;
  if (is_root) c.check_buffer(recvbuf, bytes, "recvbuf");
  void* out = is_root ? recvbuf : nullptr;
  size_t out_bytes = is_root ? bytes : 0;
  shm_request_t req = c.reduction(sendbuf, out, count, item_size, op);
  req.root = root;
  if (c.run_local(req, true, out, out_bytes)) return;
  if (shm_team_t* t = c.hier_team(true))
    if (reduce_hier(c, t, sendbuf, recvbuf, count, item_size, op, root)) return;
  // a non-root accumulates its subtree in scratch (its recvbuf may be
  // null); the root in recvbuf, which may be sendbuf
  void* acc = is_root ? recvbuf : c.scratch(bytes);
  reduce_tree(c, sendbuf, acc, count, bytes, op, root, nullptr);
  c.run(out, out_bytes);
}

}  // namespace lci
