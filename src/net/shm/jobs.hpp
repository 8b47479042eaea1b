// The native shm backend's fallback transfer engine: RMA that cannot use
// cross-memory attach moves through the rings in chunks. A job is queued
// per transfer (the data of a write or of a read's answer, or a write's
// ack) and pushed piece by piece as ring space allows, from any poll.
#ifndef LCI_NET_SHM_JOBS_HPP
#define LCI_NET_SHM_JOBS_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>

#include "net/shm/tx_ring.hpp"
#include "util/spinlock.hpp"

namespace lci::net::shm
{

// a fallback transfer the device pushes through a ring piece by piece
struct tx_job_t {
  int rank;
  uint16_t type;  // kWriteData, kReadData or kWriteAck
  const char* src;
  uint64_t remaining;
  uint64_t dst;
  uint64_t ctx;
  uint64_t imm;
  bool has_imm;
};

class job_engine_t
{
 public:
  // `tx`: the device's producer rings by peer rank; `chunk`: the payload of
  // one data piece
  void init(tx_ring_t* tx, size_t chunk)
  {
    tx_ = tx;
    chunk_ = chunk;
  }
  // Queues a fallback transfer and pushes what fits at once: the peer may
  // depend on it (an ack) while this device's owner no longer polls it.
  void add(const tx_job_t& j);
  // pushes the queued transfers' pieces that fit into their rings
  void run();
  // transfers not pushed completely yet
  bool any() const { return n_.load(std::memory_order_acquire) != 0; }
  size_t size();  // diagnostics

 private:
  // true when the job is done
  bool run_one(tx_job_t& j);

  tx_ring_t* tx_ = nullptr;
  size_t chunk_ = 0;
  alignas(64) util::spinlock_t lock_;
  std::atomic<size_t> n_{0};
  std::deque<tx_job_t> jobs_;
};

}  // namespace lci::net::shm

#endif  // LCI_NET_SHM_JOBS_HPP
