// The network backend interface (paper 4.2.1): a context holds the global
// network resources of one runtime (fabric, domain, memory registrations), a
// device the resources on the critical path of one LCI device (endpoint,
// completion queue, address vector). The interface is narrow, so that a
// libibverbs or shared-memory backend fits it: messages to a rank (copied at
// once where the backend owns memory for them, else from a buffer that
// completes later), received in place where the backend owns the memory
// they arrive in (peek, then release) or into pre-posted receives where it
// does not, RDMA write (optionally with immediate data) and read into
// registered memory, and polling. A post may
// complete in the call (done) when the backend finished it there; the core
// never waits for a completion that has nothing left to report. The core
// never sees a backend type: it holds a link_t. A backend registers a
// factory by name (net/registry.hpp).
//
// Thread safety: every call may come from any thread. A backend guards its
// own objects with try-locks at the granularity of the provider's locks and
// reports a busy lock as retry_lock (posts) or as "nothing polled".
#ifndef LCI_NET_NET_HPP
#define LCI_NET_NET_HPP

#include <algorithm>
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
  // largest message an inject route's send_copy accepts (the minimum over
  // the routes: the runtime attribute max_inject_size reports it)
  size_t max_inject_size = 0;
  size_t max_msg_size = 0;  // largest single send, write or read
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
struct net_mr_t {
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
    // points at its `length` bytes, in memory the backend owns (its ring)
    // or in the caller's scratch buffer (see poll_comp), valid until the
    // caller's release()
    message
  } kind;
  void* ctx;      // as given to the post call (message: the bytes)
  size_t length;  // bytes received (recv and message only)
  uint64_t imm;   // the immediate data (remote_write only)
  // nullptr, or why the operation failed (a static string); ctx still
  // identifies the operation
  const char* error;
  // recv: the sender's rank (every backend reports it; ofi needs a provider
  // with remote completion data, else -1). With `error`: the peer rank the
  // failed operation was with, when the backend knows it, else -1. A backend
  // that sees a peer die (a connection reset, a dead process) reports it this
  // way; the core then checks that rank and declares a peer failure
  // (core/peer_failure.hpp). The ofi backend does not know it (libfabric error
  // entries carry no peer); the core then checks every same-host peer.
  int rank = -1;
  // With `error`: the target checked the operation's key and bytes against
  // its registrations and refused it; the peer is fine (no peer failure).
  bool refused = false;
};

// What the route to one peer rank offers the core's small sends: under the
// combining backend (net/hybrid) the routes of one device differ (native
// shm to the node's ranks, libfabric to the others), so the core decides
// per message, by its destination, never by one device-wide minimum.
struct route_caps_t {
  // the largest message (header and payload) send_copy takes on this route
  size_t max_copy = 0;
  // true: send_copy copies the message into memory the backend owns (native
  // shm: its ring) at no more cost than a send from a packet would, so the
  // core sends every message up to max_copy that way; false: send_copy is a
  // provider inject, bounded as well by the runtime's inject limit
  // (attribute max_inject_size)
  bool copies = false;
  // On a route that copies: the largest message (header and payload) the
  // core sends eagerly, even above what a packet holds (the receiving
  // backend hands such messages over in place, so neither side needs a
  // packet for one), when larger than the packet-bound eager limit; at
  // most max_copy. 0: the packet bounds eager messages on this route.
  size_t max_eager = 0;
  // Writes to and reads from the peer's registered memory of at least this
  // many bytes are copied by the initiating process alone, finished within
  // the post (native shm with cross-memory attach), so the two ends of a
  // rendezvous can each copy a part of the message at once without waiting
  // for the other's progress. 0: not so on this route.
  size_t direct_min = 0;
};

// One backend endpoint of one LCI device. The core reaches it only through
// link_t below.
//
// Results of the post calls: done means the operation is complete on
// return and no cqe follows (a send whose buffer the backend copied, a CMA
// transfer that finished in the call); posted means a cqe with `ctx` comes
// from poll_comp later; retry_lock / retry_nomem mean nothing happened.
class net_device_t
{
 public:
  virtual ~net_device_t() = default;
  // This endpoint's address, as bytes to ship to the peers.
  virtual std::string get_address() = 0;
  // addrs[r] is rank r's endpoint address for the same device index.
  virtual void connect(const std::vector<std::string>& addrs) = 0;
  // Every rank has returned from connect (the allocation's closing barrier
  // is behind): no peer needs anything more to reach this endpoint.
  // Default: nothing.
  virtual void connected() {}
  // What the route to `rank` offers (after connect).
  virtual route_caps_t route(int rank) = 0;
  // Send the message `head` (hlen bytes) followed by `tail` (tlen bytes;
  // the core's wire header and the user's payload), hlen + tlen at most
  // route(rank).max_copy. Both pieces are reusable on return and no cqe
  // follows: done, or retry_lock / retry_nomem.
  virtual error_t send_copy(int rank, const void* head, size_t hlen,
                            const void* tail, size_t tlen) = 0;
  // Send a buffer: done (copied, no cqe), or posted (a send cqe with `ctx`
  // arrives when the buffer is reusable), or retry_lock / retry_nomem.
  virtual error_t post_send(int rank, const void* buf, size_t size,
                            void* ctx) = 0;
  // post_send whose send cqe waits for the strongest completion level the
  // provider offers (caps_t::network_completion): comp_semantic network.
  // posted or retry_* (never done).
  virtual error_t post_send_network(int rank, const void* buf, size_t size,
                                    void* ctx) = 0;
  // Whether messages land only in pre-posted receive buffers (post_recv),
  // so that the core must keep some posted; false for a backend that owns
  // the memory messages arrive in and hands each over in place (message
  // cqes). Fixed once connect has returned. Default: true.
  virtual bool needs_recvs() { return true; }
  // Pre-post a receive buffer; a recv cqe with `ctx` arrives when a message
  // has landed in it. posted, or retry_lock / retry_nomem. Only called when
  // needs_recvs().
  virtual error_t post_recv(void* buf, size_t size, void* ctx) = 0;
  // RDMA write of `size` (1..max_msg_size) bytes to `remote` in the
  // target's registration; `desc` is the local registration's (null when
  // caps().mr_local is false and there is none). done (the data is at the
  // target already), or posted: a write cqe with `ctx` arrives when the
  // buffer is reusable and, with `delivered`, the data is visible at the
  // target. Or retry_*.
  virtual error_t post_write(int rank, const void* buf, size_t size, void* desc,
                             const remote_t& remote, void* ctx,
                             bool delivered) = 0;
  // A write that also delivers `imm` (caps().imm_data_size bytes) to the
  // target as a remote_write cqe once the data is visible there.
  virtual error_t post_writeimm(int rank, const void* buf, size_t size,
                                void* desc, const remote_t& remote,
                                uint64_t imm, void* ctx) = 0;
  // RDMA read of `size` bytes from the target into `buf`: done (the data
  // is there), or posted (a read cqe with `ctx` arrives when it is), or
  // retry_*.
  virtual error_t post_read(int rank, void* buf, size_t size, void* desc,
                            const remote_t& remote, void* ctx) = 0;
  // Up to `max` completions; 0 when none (or the lock was busy). A failed
  // operation comes back as a cqe with `error` set. Incoming messages may
  // come as `message` cqes instead of into pre-posted receive buffers:
  // pointing into memory the backend owns (peek), or copied into `scratch`
  // (`scratch_size` bytes, 16-byte aligned); the core handles them in
  // place (copied once, into their destination). Messages of one peer come
  // out in the order sent whichever way each one takes.
  //
  // Peek and consume: after a poll that returned completions, the caller
  // handles every one of them, in order (whether or not handling one
  // throws), then calls release(out, n) (link_t skips it when the
  // backend's loan_marker says nothing is lent). Until then the bytes of its
  // message cqes stay where they are: a backend that lends its own memory
  // keeps it (and the lock that guards it, so that other threads' polls
  // find nothing meanwhile) and takes it back in release(). A caller that
  // must poll the device again before that (a handler that progresses its
  // own device) first handles the rest of the batch and releases it; it
  // reads a message's bytes only before it signals any completion for it,
  // so the message whose handling polls needs them no more.
  virtual size_t poll_comp(cqe_t* out, size_t max, char* scratch,
                           size_t scratch_size) = 0;
  // Ends the poll that returned the `n` completions at `batch` (its `out`
  // and its result): the memory its message cqes pointed into goes back to
  // the backend. A backend that lent nothing in that poll does nothing
  // (so a release for another thread's poll never takes back that poll's
  // loan). Default: nothing (nothing is lent).
  virtual void release(const cqe_t* batch, size_t n)
  {
    (void)batch;
    (void)n;
  }
  // Where a backend that lends says whether a loan is out: non-null from a
  // poll that lent until its release, null otherwise (written by the
  // lending poll's thread only). The core skips release() while it reads
  // null: its own poll lent nothing then. Default: null, never lends.
  virtual const std::atomic<const cqe_t*>* loan_marker() { return nullptr; }
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

// The core's one way to a backend device: a thin non-virtual layer that
// owns the backend endpoint and keeps, per peer rank, the largest message
// the core may hand to send_copy (route_caps_t, resolved at connect), so
// that the small-send decision is one load and a compare.
class link_t
{
 public:
  link_t() = default;
  explicit link_t(std::unique_ptr<net_device_t> dev) : dev_(std::move(dev)) {}

  explicit operator bool() const { return dev_ != nullptr; }
  net_device_t* backend() const { return dev_.get(); }
  void reset() { dev_.reset(); }

  std::string get_address() { return dev_->get_address(); }
  // Connects, then resolves each route's send_copy limit: a route that
  // copies takes any message up to its max_copy, an inject route at most
  // `inject_wire` bytes (the runtime's inject limit in force).
  void connect(const std::vector<std::string>& addrs, size_t inject_wire)
  {
    dev_->connect(addrs);
    copy_limit_.assign(addrs.size(), 0);
    eager_limit_.assign(addrs.size(), 0);
    direct_min_.assign(addrs.size(), 0);
    for (size_t r = 0; r < addrs.size(); ++r) {
      const route_caps_t c = dev_->route(static_cast<int>(r));
      copy_limit_[r] =
          c.copies ? c.max_copy : std::min(c.max_copy, inject_wire);
      eager_limit_[r] = c.copies ? std::min(c.max_eager, c.max_copy) : 0;
      direct_min_[r] = c.direct_min;
    }
    needs_recvs_ = dev_->needs_recvs();
    loan_ = dev_->loan_marker();
  }
  void connected() { dev_->connected(); }

  // the largest message (wire header included) send_copy takes to `rank`
  size_t copy_limit(int rank) const
  {
    return copy_limit_[static_cast<size_t>(rank)];
  }
  // the largest message (wire header included) the route to `rank` carries
  // eagerly without a packet (route_caps_t::max_eager; 0: none)
  size_t eager_limit(int rank) const
  {
    return eager_limit_[static_cast<size_t>(rank)];
  }

  // route_caps_t::direct_min of the route to `rank`
  size_t direct_min(int rank) const
  {
    return direct_min_[static_cast<size_t>(rank)];
  }

  error_t send_copy(int rank, const void* head, size_t hlen, const void* tail,
                    size_t tlen)
  {
    return dev_->send_copy(rank, head, hlen, tail, tlen);
  }
  error_t post_send(int rank, const void* buf, size_t size, void* ctx)
  {
    return dev_->post_send(rank, buf, size, ctx);
  }
  error_t post_send_network(int rank, const void* buf, size_t size, void* ctx)
  {
    return dev_->post_send_network(rank, buf, size, ctx);
  }
  // whether the core keeps receive buffers posted (resolved at connect)
  bool needs_recvs() const { return needs_recvs_; }
  error_t post_recv(void* buf, size_t size, void* ctx)
  {
    return dev_->post_recv(buf, size, ctx);
  }
  error_t post_write(int rank, const void* buf, size_t size, void* desc,
                     const remote_t& remote, void* ctx, bool delivered)
  {
    return dev_->post_write(rank, buf, size, desc, remote, ctx, delivered);
  }
  error_t post_writeimm(int rank, const void* buf, size_t size, void* desc,
                        const remote_t& remote, uint64_t imm, void* ctx)
  {
    return dev_->post_writeimm(rank, buf, size, desc, remote, imm, ctx);
  }
  error_t post_read(int rank, void* buf, size_t size, void* desc,
                    const remote_t& remote, void* ctx)
  {
    return dev_->post_read(rank, buf, size, desc, remote, ctx);
  }
  size_t poll(cqe_t* out, size_t max, char* scratch, size_t scratch_size)
  {
    return dev_->poll_comp(out, max, scratch, scratch_size);
  }
  // (nothing to do when no loan is out: a poll that lent nothing, the
  // common case, costs a load)
  void release(const cqe_t* batch, size_t n)
  {
    if (lent()) dev_->release(batch, n);
  }
  // whether a loan is out: the caller's last poll lent (its own poll's
  // loan is always seen), or another thread's poll did
  bool lent() const
  {
    return loan_ && loan_->load(std::memory_order_relaxed) != nullptr;
  }
  bool busy() { return dev_->busy(); }
  std::string debug_state() { return dev_->debug_state(); }

 private:
  std::unique_ptr<net_device_t> dev_;
  std::vector<size_t> copy_limit_;   // by peer rank
  std::vector<size_t> eager_limit_;  // by peer rank
  std::vector<size_t> direct_min_;   // by peer rank
  bool needs_recvs_ = true;
  const std::atomic<const cqe_t*>* loan_ = nullptr;  // loan_marker()
};

class context_t
{
 public:
  virtual ~context_t() = default;
  const caps_t& caps() const { return caps_; }
  virtual std::unique_ptr<net_device_t> alloc_device(
      const device_attr_t& attr) = 0;
  // Registers [buf, buf + size) for local use and for remote writes and
  // reads by peers; throws fatal_error (naming `call`) when the backend
  // refuses. Any thread.
  virtual net_mr_t register_memory(void* buf, size_t size,
                                   const char* call) = 0;
  // register_memory under the remote key `rkey`, chosen by the caller: a
  // combining backend (net/hybrid) whose peers present one key on every
  // path. A backend that checks keys itself lists the region under it; the
  // default registers as usual and ignores `rkey` (for backends whose keys
  // the combining backend does not pass on).
  virtual net_mr_t register_memory_key(void* buf, size_t size, const char* call,
                                       uint64_t rkey)
  {
    (void)rkey;
    return register_memory(buf, size, call);
  }
  virtual void deregister_memory(net_mr_t* mr) = 0;
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
