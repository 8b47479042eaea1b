// reduce (docs/COLLECTIVES.md): the node-local team when it serves the
// call, else a binomial tree (coll_graph.hpp's reduce_tree).
#include "coll/coll_graph.hpp"

namespace lci
{
using namespace coll;

void reduce_x::call_impl(const void* sendbuf, void* recvbuf, size_t count,
                         size_t item_size, reduce_op_t op, int root,
                         runtime_t runtime, device_t device,
                         matching_engine_t matching_engine, comp_t comp,
                         void* user_context)
{
  coll_t c("reduce", shm_kind_t::reduce, runtime, device, matching_engine, comp,
           user_context);
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
  // a non-root accumulates its subtree in scratch (its recvbuf may be
  // null); the root in recvbuf, which may be sendbuf
  void* acc = is_root ? recvbuf : c.scratch(bytes);
  reduce_tree(c, sendbuf, acc, count, bytes, op, root, nullptr);
  c.run(out, out_bytes);
}

}  // namespace lci
