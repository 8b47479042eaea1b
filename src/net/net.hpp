// The network backend interface (paper 4.2.1): a context holds the global
// network resources of one runtime (fabric, domain, memory registrations), a
// device the resources on the critical path of one LCI device (endpoint,
// completion queue, address vector). The interface is narrow on purpose, so
// that a libibverbs or shared-memory backend fits it: messages to a rank,
// pre-posted receives, RDMA write (optionally with immediate data) and read
// into registered memory, and polling. The core never sees a backend type; a
// backend registers a factory by name (net/registry.hpp).
//
// Thread safety: every call may come from any thread. A backend guards its
// own objects with try-locks at the granularity of the provider's locks and
// reports a busy lock as retry_lock (posts) or as "nothing polled".
#ifndef LCI_NET_NET_HPP
#define LCI_NET_NET_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lci.hpp"

namespace lci::net
{

struct caps_t {
  std::string backend;   // "ofi", "shm" or "hybrid"
  std::string provider;  // e.g. "shm", "tcp;ofi_rxm"
  // the libfabric provider as the attribute ofi_provider_name names it
  // ("shm", "tcp", ...; empty: no libfabric context) and its domain (tcp:
  // the network interface)
  std::string ofi_provider;
  std::string ofi_domain;
  size_t max_inject_size = 0;  // largest buffer post_inject accepts
  size_t max_msg_size = 0;     // largest single send, write or read
  // the completion level post_send_network asks for: "delivery" (the target
  // provider has processed the message), "transmit" (it left this endpoint
  // and no longer depends on local resources) or "default" (whatever plain
  // sends give)
  std::string network_completion = "default";
  bool rma = false;  // post_write / post_read work
  // bytes of immediate data post_writeimm delivers to the target (0: the
  // backend cannot; at least 4 when it can)
  size_t imm_data_size = 0;
  // local buffers of sends, writes and reads need a registration (its desc)
  bool mr_local = false;
  // a registration's rma_base is its virtual address (else 0: peers
  // address the region by offset)
  bool rma_virtual = false;
};

// A memory registration, valid on every device of the context.
struct mr_t {
  void* desc = nullptr;  // local descriptor (may be null)
  uint64_t rkey = 0;     // the key a peer's write or read must present
  // the remote address of the region's first byte: its virtual address, or
  // 0 when peers address it by offset (caps_t::rma_virtual)
  uint64_t rma_base = 0;
  void* handle = nullptr;  // backend-private
};

// Where an RDMA write or read lands in the target: the target
// registration's rma_base and rkey (as its owner's register_memory returned
// them) and the offset from the registration's first byte. Base and offset
// stay apart so that a backend routing per peer (net/hybrid) can address one
// registration two ways: by virtual address (native shm) and by offset
// (libfabric without FI_MR_VIRT_ADDR, e.g. tcp).
struct remote_t {
  uint64_t base = 0;
  uint64_t disp = 0;
  uint64_t rkey = 0;
};

// One completed network operation.
struct cqe_t {
  enum class kind_t {
    send,          // post_send finished with the buffer
    recv,          // a message landed in a post_recv buffer
    write,         // post_write / post_writeimm finished (locally)
    read,          // post_read finished: the data is in the local buffer
    remote_write,  // a peer's post_writeimm landed here (ctx is null)
    // a message handed over in place, without a pre-posted receive: ctx
    // points at its `length` bytes in the caller's scratch buffer (see
    // poll_comp), valid until the caller's next poll with that buffer
    message
  } kind;
  void* ctx;      // as given to the post call (message: the bytes)
  size_t length;  // bytes received (recv and message only)
  uint64_t imm;   // the immediate data (remote_write only)
  // nullptr, or why the operation failed (a static string); ctx still
  // identifies the operation
  const char* error;
  // With `error`: the peer rank the failed operation was with, when the
  // backend knows it, else -1. A backend that sees a peer die (a connection
  // reset, a dead process) reports it this way; the core then checks that
  // rank and declares a peer failure (core/peer_failure.hpp). The ofi
  // backend does not know it (libfabric error entries carry no peer); the
  // core then checks every same-host peer.
  int rank = -1;
  // With `error`: the target checked the operation's key and bytes against
  // its registrations and refused it; the peer is fine (no peer failure).
  bool refused = false;
};

class device_t
{
 public:
  virtual ~device_t() = default;
  // This endpoint's address, as bytes to ship to the peers.
  virtual std::string get_address() = 0;
  // addrs[r] is rank r's endpoint address for the same device index.
  virtual void connect(const std::vector<std::string>& addrs) = 0;
  // Every rank has returned from connect (the allocation's closing barrier
  // is behind): no peer needs anything more to reach this endpoint.
  // Default: nothing.
  virtual void connected() {}
  // Send a small buffer; it is reusable on return and no completion is
  // generated. done, or retry_lock / retry_nomem.
  virtual error_t post_inject(int rank, const void* buf, size_t size) = 0;
  // post_inject of the message `head` (hlen bytes) followed by `tail`
  // (tlen bytes; the core's wire header and the user's payload), without
  // the caller gathering them first. A backend that copies the message
  // anyway (native shm: into its ring) takes both pieces at once; the
  // default gathers them on the stack (net.cpp) and calls post_inject.
  virtual error_t post_inject_gather(int rank, const void* head, size_t hlen,
                                     const void* tail, size_t tlen);
  // Send a buffer; a send cqe with `ctx` arrives when it is reusable.
  // posted, or retry_lock / retry_nomem.
  virtual error_t post_send(int rank, const void* buf, size_t size,
                            void* ctx) = 0;
  // post_send whose send cqe waits for the strongest completion level the
  // provider offers (caps_t::network_completion): comp_semantic network.
  virtual error_t post_send_network(int rank, const void* buf, size_t size,
                                    void* ctx) = 0;
  // Pre-post a receive buffer; a recv cqe with `ctx` arrives when a message
  // has landed in it. posted, or retry_lock / retry_nomem.
  virtual error_t post_recv(void* buf, size_t size, void* ctx) = 0;
  // RDMA write of `size` (1..max_msg_size) bytes to `remote` in the
  // target's registration; `desc` is the local registration's (null when
  // caps().mr_local is false and there is none). A write cqe with `ctx`
  // arrives when the buffer is reusable and, with `delivered`, the data is
  // visible at the target. posted or retry_*.
  virtual error_t post_write(int rank, const void* buf, size_t size, void* desc,
                             const remote_t& remote, void* ctx,
                             bool delivered) = 0;
  // A write that also delivers `imm` (caps().imm_data_size bytes) to the
  // target as a remote_write cqe once the data is visible there.
  virtual error_t post_writeimm(int rank, const void* buf, size_t size,
                                void* desc, const remote_t& remote,
                                uint64_t imm, void* ctx) = 0;
  // RDMA read of `size` bytes from the target into `buf`; a read cqe with
  // `ctx` arrives when the data is there. posted or retry_*.
  virtual error_t post_read(int rank, void* buf, size_t size, void* desc,
                            const remote_t& remote, void* ctx) = 0;
  // Up to `max` completions; 0 when none (or the lock was busy). A failed
  // operation comes back as a cqe with `error` set. A backend may copy
  // small incoming messages into `scratch` (`scratch_size` bytes, 16-byte
  // aligned) instead of into pre-posted receive buffers and return them as
  // `message` cqes: no receive is consumed, and the core handles them in
  // place (copied once more only into the user's buffer). Messages of one
  // peer come out in the order sent whichever way each one takes.
  virtual size_t poll_comp(cqe_t* out, size_t max, char* scratch,
                           size_t scratch_size) = 0;
  // Work the backend still has to do for peers on its own: transfers a
  // peer asked of this device (the native shm fallback's reads for a
  // peer's get) waiting for ring space. Such a device is not drained
  // (test_drained): its owner must keep progressing it. Default: none.
  virtual bool busy() { return false; }
  // Diagnostics only (never on a fast path): a one-line summary of the
  // backend's queues, for the dump of a stuck test; empty when the backend
  // has nothing to say.
  virtual std::string debug_state() { return {}; }
};

class context_t
{
 public:
  virtual ~context_t() = default;
  const caps_t& caps() const { return caps_; }
  virtual std::unique_ptr<device_t> alloc_device(const device_attr_t& attr) = 0;
  // Registers [buf, buf + size) for local use and for remote writes and
  // reads by peers; throws fatal_error (naming `call`) when the backend
  // refuses. Any thread.
  virtual mr_t register_memory(void* buf, size_t size, const char* call) = 0;
  // register_memory under the remote key `rkey`, chosen by the caller: a
  // combining backend (net/hybrid) whose peers present one key on every
  // path. A backend that checks keys itself lists the region under it; the
  // default registers as usual and ignores `rkey` (for backends whose keys
  // the combining backend does not pass on).
  virtual mr_t register_memory_key(void* buf, size_t size, const char* call,
                                   uint64_t rkey)
  {
    (void)rkey;
    return register_memory(buf, size, call);
  }
  virtual void deregister_memory(mr_t* mr) = 0;
  // Registrations made and not yet released, by any caller (introspection
  // for tests: a leak check).
  int64_t count_registered() const
  {
    return nregistered_.load(std::memory_order_relaxed);
  }

 protected:
  caps_t caps_;
  std::atomic<int64_t> nregistered_{0};
};

// The context of the backend named in attr.backend (a name in the registry,
// net/registry.hpp, or "auto") for rank `rank_me` of `rank_n`; nodes[r] is rank
// r's node id (net/node.hpp), which decides the peers the native shm backend
// serves.
std::unique_ptr<context_t> alloc_context(const runtime_attr_t& attr,
                                         int rank_me, int rank_n,
                                         const std::vector<std::string>& nodes);

}  // namespace lci::net

#endif  // LCI_NET_NET_HPP
