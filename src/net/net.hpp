// The network backend interface (paper 4.2.1): a context holds the global
// network resources of one runtime (fabric, domain), a device the resources
// on the critical path of one LCI device (endpoint, completion queue,
// address vector). The interface is narrow on purpose: messages to a rank,
// pre-posted receives, and polling. The core never sees a backend type; a
// backend registers a factory by name (see net.cpp).
//
// Thread safety: every device call may come from any thread. A backend guards
// its own objects with try-locks at the granularity of the provider's locks
// and reports a busy lock as retry_lock (posts) or as "nothing polled".
#ifndef LCI_NET_NET_HPP
#define LCI_NET_NET_HPP

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "lci.hpp"

namespace lci::net
{

struct caps_t {
  std::string provider;        // e.g. "shm", "tcp;ofi_rxm"
  size_t max_inject_size = 0;  // largest buffer post_inject accepts
  size_t max_msg_size = 0;     // largest buffer post_send accepts
  // the completion level post_send_network asks for: "delivery" (the target
  // provider has processed the message), "transmit" (it left this endpoint
  // and no longer depends on local resources) or "default" (whatever plain
  // sends give)
  std::string network_completion = "default";
};

// One completed network operation.
struct cqe_t {
  enum class kind_t { send, recv } kind;
  void* ctx;      // as given to post_send / post_recv
  size_t length;  // bytes received (recv only)
};

class device_t
{
 public:
  virtual ~device_t() = default;
  // This endpoint's address, as bytes to ship to the peers.
  virtual std::string get_address() = 0;
  // addrs[r] is rank r's endpoint address for the same device index.
  virtual void connect(const std::vector<std::string>& addrs) = 0;
  // Send a small buffer; it is reusable on return and no completion is
  // generated. done, or retry_lock / retry_nomem.
  virtual error_t post_inject(int rank, const void* buf, size_t size) = 0;
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
  // Up to `max` completions; 0 when none (or the lock was busy).
  virtual size_t poll_comp(cqe_t* out, size_t max) = 0;
};

class context_t
{
 public:
  virtual ~context_t() = default;
  const caps_t& caps() const { return caps_; }
  virtual std::unique_ptr<device_t> alloc_device(const device_attr_t& attr) = 0;

 protected:
  caps_t caps_;
};

// The context of the backend named in attr.backend (only "ofi" today).
std::unique_ptr<context_t> alloc_context(const runtime_attr_t& attr);

}  // namespace lci::net

#endif  // LCI_NET_NET_HPP
