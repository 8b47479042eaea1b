// One device of the ibv backend (paper 4.2.3): a completion queue and a
// shared receive queue, each behind its own try-lock, and one RC queue
// pair per peer rank (qp_table.hpp) behind the try-locks of the thread
// domain strategy (lock_policy.hpp).
//
// Posts: send_copy is an inline send (the message travels in the work
// request: no registration, reusable on return); post_send and
// post_send_network send from the core's packet, registered through the
// cache (reg_cache.hpp); post_write, post_writeimm and post_read are RDMA
// write, write with immediate (the immediate encoded by imm.hpp) and read.
// Every send-side work request is signaled; its wr_id is the core's context
// with the operation in its two low bits (contexts are 8-byte aligned), so
// that even a failed completion, whose opcode the verbs leave undefined,
// goes back as the right kind. A device never posts more signaled work
// than its completion queue holds beside the receives (credits).
//
// Receives: the core's buffer goes to the shared receive queue inside a
// receive record of this device (a fixed array, so a completion's wr_id
// is known as a receive by its address). A peer's write with immediate
// consumes one of them without the core knowing: the device posts that
// same buffer again at once and reports a remote_write.
#ifndef LCI_NET_IBV_DEVICE_HPP
#define LCI_NET_IBV_DEVICE_HPP

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "net/ibv/context.hpp"
#include "net/ibv/lock_policy.hpp"
#include "net/ibv/qp_table.hpp"
#include "net/net.hpp"
#include "util/spinlock.hpp"

namespace lci::net::ibv
{

class ibv_device_t final : public net_device_t
{
 public:
  ibv_device_t(ibv_context_t& ctx, const device_attr_t& attr);
  ~ibv_device_t() override;

  std::string get_address() override;
  void connect(const std::vector<std::string>& addrs) override;
  route_caps_t route(int rank) override;
  error_t send_copy(int rank, const void* head, size_t hlen, const void* tail,
                    size_t tlen) override;
  error_t post_send(int rank, const void* buf, size_t size, void* ctx) override;
  error_t post_send_network(int rank, const void* buf, size_t size,
                            void* ctx) override;
  error_t post_recv(void* buf, size_t size, void* ctx) override;
  error_t post_write(int rank, const void* buf, size_t size, void* desc,
                     const remote_t& remote, void* ctx,
                     bool delivered) override;
  error_t post_writeimm(int rank, const void* buf, size_t size, void* desc,
                        const remote_t& remote, uint64_t imm,
                        void* ctx) override;
  error_t post_read(int rank, void* buf, size_t size, void* desc,
                    const remote_t& remote, void* ctx) override;
  size_t poll_comp(cqe_t* out, size_t max, char* scratch,
                   size_t scratch_size) override;
  std::string debug_state() override;

  // introspection for tests
  qp_table_t& qps() { return qps_; }
  qp_locks_t& qp_locks() { return locks_; }
  util::spinlock_t& cq_lock() { return cq_lock_; }
  util::spinlock_t& srq_lock() { return srq_lock_; }

 private:
  struct recv_rec_t {
    void* buf;
    uint32_t len;
    uint32_t lkey;
    void* ctx;
  };
  enum tag_t : uint64_t {
    tag_send = 0,
    tag_write = 1,
    tag_read = 2,
    tag_internal = 3
  };

  error_t post(int rank, wr_t& wr, void* ctx, tag_t tag);
  uint32_t local_key(const void* buf, size_t size, void* desc);
  // a write, write with immediate or read of `size` bytes at `remote`
  wr_t rma_wr(op_t op, const void* buf, size_t size, void* desc,
              const remote_t& remote);
  bool is_recv(uint64_t wr_id) const;
  void close();

  verbs_t* v_;
  reg_cache_t* cache_;
  int rank_me_, rank_n_;
  bool lazy_;
  void* cq_ = nullptr;
  void* srq_ = nullptr;
  std::vector<void*> tds_;
  qp_locks_t locks_;
  qp_table_t qps_;
  uint32_t max_inline_;
  util::spinlock_t cq_lock_;
  util::spinlock_t srq_lock_;
  // receive records: recs_[i] free when on the free list
  std::unique_ptr<recv_rec_t[]> recs_;
  size_t nrecs_;
  util::spinlock_t free_lock_;
  std::vector<recv_rec_t*> free_;
  std::atomic<int64_t> credits_;  // signaled work the CQ still has room for
  std::atomic<int64_t> srq_posted_{0};
};

}  // namespace lci::net::ibv

#endif  // LCI_NET_IBV_DEVICE_HPP
