#include "net/shm/completions.hpp"

#include "net/shm/device.hpp"

namespace lci::net::shm
{

void local_cqes_t::push(cqe_t::kind_t kind, void* ctx, const char* error,
                        bool refused)
{
  cqe_t c{kind, ctx, 0, 0, error};
  c.refused = refused;
  util::spin_guard_t g(lock_);
  q_.push_back(c);
  n_.store(q_.size(), std::memory_order_relaxed);
}

size_t local_cqes_t::take(cqe_t* out, size_t max)
{
  util::spin_guard_t g(lock_);
  size_t n = 0;
  while (n < max && !q_.empty()) {
    out[n++] = q_.front();
    q_.pop_front();
  }
  n_.store(q_.size(), std::memory_order_relaxed);
  return n;
}

size_t local_cqes_t::size()
{
  util::spin_guard_t g(lock_);
  return q_.size();
}

error_t shm_device_t::post_send_network(int rank, const void* buf, size_t size,
                                        void* ctx)
{
  check_size(size);
  tx_ring_t& t = tx_[rank];
  if (!t.lock.try_lock()) return errorcode_t::retry_lock;
  bool ok = !t.jobs_ahead() && t.prod.push(kMsg, buf, size);
  if (ok) {
    t.network.emplace_back(t.prod.tail(), ctx);
    nnetwork_.fetch_add(1, std::memory_order_relaxed);
    t.ring_bell();
  }
  t.lock.unlock();
  return ok ? errorcode_t::posted : errorcode_t::retry_nomem;
}

void shm_device_t::check_network()
{
  for (int r = 0; r < cfg_.rank_n; ++r) {
    tx_ring_t& t = tx_[r];
    if (!t.lock.try_lock()) continue;
    while (!t.network.empty() && t.prod.consumed(t.network.front().first)) {
      local_.push(cqe_t::kind_t::send, t.network.front().second);
      t.network.pop_front();
      nnetwork_.fetch_sub(1, std::memory_order_relaxed);
    }
    t.lock.unlock();
  }
}

}  // namespace lci::net::shm
