// RDMA transfers of the rendezvous protocols and of put / get: a buffer cut
// into fragments of at most the runtime's max_rma_size bytes (the backend's
// maximum transfer, or the max_msg_size attribute), each posted as one
// write, write with immediate data, or read. The operation that owns them
// (a transfer_op_t) is the context of every fragment; its transfer_done()
// runs once per fragment completion: in progress, or in the post itself when
// the backend finished the fragment there.
//
// Fragments are posted in order. When the network refuses one, it and the
// ones after it go to the device's backlog queue and progress posts them
// later: nothing here spins.
#ifndef LCI_CORE_TRANSFER_HPP
#define LCI_CORE_TRANSFER_HPP

#include <cstddef>
#include <cstdint>

#include "lci.hpp"
#include "net/net.hpp"

namespace lci
{

class device_impl_t;

class transfer_op_t
{
 public:
  virtual ~transfer_op_t() = default;
  // One fragment is complete (cqe.error set if it failed). Runs inside
  // progress, on any thread, possibly concurrently with itself.
  virtual void transfer_done(const net::cqe_t& cqe) = 0;
};

struct transfer_plan_t {
  enum class kind_t { write, writeimm, read } kind;
  int rank;
  char* local;           // the local buffer
  void* desc;            // its registration's descriptor (may be null)
  net::remote_t remote;  // where fragment 0 lands (disp grows per fragment)
  uint64_t imm;          // writeimm: the immediate data of every fragment
  size_t size;           // total bytes (> 0)
  size_t frag;           // bytes per fragment (> 0)
  bool delivered;  // write: complete only once the data is visible remotely

  size_t nfrags() const { return size / frag + (size % frag != 0); }
};

// Posts fragment i; posted or a retry code. A fragment the backend
// finished in the call is completed here (op->transfer_done, which may
// complete and free `op`) and reported posted: the caller never touches
// `op` after posting its last fragment.
error_t post_fragment(device_impl_t* dev, const transfer_plan_t& plan, size_t i,
                      transfer_op_t* op);

// Posts fragments [first, nfrags) in order; the first refused one and the
// rest are queued in the device's backlog. Never returns retry.
void post_fragments(device_impl_t* dev, const transfer_plan_t& plan,
                    size_t first, transfer_op_t* op);

}  // namespace lci

#endif  // LCI_CORE_TRANSFER_HPP
