// The ibv backend's context: the opened device (verbs layer), the
// implicit on-demand-paging registration when in force, and the
// registration cache, shared by every device of the runtime.
#ifndef LCI_NET_IBV_CONTEXT_HPP
#define LCI_NET_IBV_CONTEXT_HPP

#include <atomic>
#include <memory>

#include "net/ibv/reg_cache.hpp"
#include "net/ibv/verbs.hpp"
#include "net/net.hpp"

namespace lci::net::ibv
{

class ibv_context_t final : public context_t
{
 public:
  ibv_context_t(const runtime_attr_t& attr, int rank_me, int rank_n);
  ~ibv_context_t() override;

  std::unique_ptr<net_device_t> alloc_device(
      const device_attr_t& attr) override;
  net_mr_t register_memory(void* buf, size_t size, const char* call) override;
  void deregister_memory(net_mr_t* mr) override;

  verbs_t* verbs() { return verbs_.get(); }
  reg_cache_t* cache() { return cache_.get(); }
  int rank_me() const { return rank_me_; }
  int rank_n() const { return rank_n_; }
  // queue pairs go to RTS on first use (job larger than the threshold)
  bool lazy() const { return lazy_; }

 private:
  std::unique_ptr<verbs_t> verbs_;
  mr_t implicit_;  // the implicit ODP registration, when in force
  std::unique_ptr<reg_cache_t> cache_;
  int rank_me_, rank_n_;
  bool lazy_;
  std::atomic<uint64_t> next_serial_{1};  // of register_memory's keys
};

}  // namespace lci::net::ibv

#endif  // LCI_NET_IBV_CONTEXT_HPP
