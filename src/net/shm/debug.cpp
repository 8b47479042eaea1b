#include "net/shm/device.hpp"

namespace lci::net::shm
{

std::string shm_device_t::debug_state()
{
  std::string s;
  bool locked = false;
  for (int i = 0; i < 100000 && !locked; ++i) locked = lock_.try_lock();
  if (!locked) s += "(consumer lock busy) ";
  for (int r = 0; r < cfg_.rank_n && locked; ++r) {
    const size_t w = static_cast<size_t>(r) / 64;
    const uint64_t bit = uint64_t(1) << (r % 64);
    ring_consumer_t::msg_t m{};
    bool full = rx_[r].peek(&m);
    s += "in[" + std::to_string(r) + "] head " + std::to_string(rx_[r].head()) +
         (full ? " msg type " : " empty") +
         (full ? std::to_string(m.type) + " len " + std::to_string(m.length)
               : "") +
         " bell " +
         std::to_string(
             (__atomic_load_n(bell_word(w), __ATOMIC_SEQ_CST) & bit) != 0) +
         " hot " + std::to_string((hot_[w] & bit) != 0) + " pending " +
         std::to_string((pending_[w] & bit) != 0) + " idle " +
         std::to_string(idle_[r]) + "; ";
  }
  if (locked) {
    // the quiet polls since the last locked one (the hot ring's idle
    // polls not counted in its idle count yet)
    const uint32_t left = quiet_left_.load(std::memory_order_relaxed);
    const bool armed = watch_.load(std::memory_order_relaxed) != nullptr;
    s += std::string("quiet ") + (armed ? "armed" : "off") + " polls " +
         std::to_string(armed && left < quiet_budget_ ? quiet_budget_ - left
                                                      : 0) +
         " ring " + std::to_string(watch_ring_) + "; ";
  }
  if (locked) lock_.unlock();
  {
    util::spin_guard_t g(recv_lock_);
    s += "raw recvs " + std::to_string(recvs_.size()) + "; ";
  }
  s += "local cqes " + std::to_string(local_.size()) + "; ";
  s += "jobs " + std::to_string(jobs_.size()) + "; ";
  for (int r = 0; r < cfg_.rank_n; ++r) {
    if (r == cfg_.rank_me) continue;
    tx_ring_t& t = tx_[r];
    util::spin_guard_t g(t.lock);
    s += "out[" + std::to_string(r) + "] tail " +
         std::to_string(t.prod.tail()) + " consumed " +
         std::to_string(t.prod.consumed(t.prod.tail())) + " network " +
         std::to_string(t.network.size()) + "; ";
  }
  return s;
}

}  // namespace lci::net::shm
