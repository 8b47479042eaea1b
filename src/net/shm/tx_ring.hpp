// The producer side of one ring of the native shm backend: what a device
// keeps per peer to push messages into that peer's segment.
#ifndef LCI_NET_SHM_TX_RING_HPP
#define LCI_NET_SHM_TX_RING_HPP

#include <atomic>
#include <cstdint>
#include <deque>
#include <utility>

#include "net/shm/doorbell.hpp"
#include "net/shm/ring.hpp"
#include "util/spinlock.hpp"

namespace lci::net::shm
{

// the producer side of the ring this rank owns in a peer's segment
struct alignas(64) tx_ring_t {
  util::spinlock_t lock;
  // fallback transfers queued toward this peer (on the lock's line: every
  // push reads it): a later message waits behind them (retry), so that
  // messages and transfers arrive in the order posted (a FIN after a put
  // lands after the put's data)
  std::atomic<uint32_t> njobs{0};
  ring_producer_t prod;
  uint64_t* bell = nullptr;  // the peer's doorbell word holding our bit
  uint64_t bit = 0;
  // post_send_network sends waiting for the consumer's head: (end, ctx)
  std::deque<std::pair<uint64_t, void*>> network;

  // a message posted now would overtake a queued fallback transfer
  bool jobs_ahead() const { return njobs.load(std::memory_order_acquire) != 0; }
  // after a push: the doorbell protocol
  void ring_bell() { doorbell_ring(bell, bit, prod.mode()); }
};

}  // namespace lci::net::shm

#endif  // LCI_NET_SHM_TX_RING_HPP
