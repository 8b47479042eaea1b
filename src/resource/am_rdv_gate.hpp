// The bound on the rendezvous active messages one device receives at once
// (runtime attribute max_am_rdv_bytes). Each such message lands in a buffer
// of its own from the runtime's allocator; answering every request as it
// arrives takes a fresh buffer for each message of a burst before the
// receiver has freed any, and a burst of large messages then writes to more
// memory than the caches hold. Behind the bound, a request waits here (its
// message bytes: header and RTS) until one in flight completes; progress
// answers it in a later call, after the receiver had the chance to free the
// completed message's buffer, which a last-in-first-out allocator then hands
// out again. The logic is core/rendezvous.cpp's; this is the state.
// Thread safety: any-thread.
#ifndef LCI_RESOURCE_AM_RDV_GATE_HPP
#define LCI_RESOURCE_AM_RDV_GATE_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>

#include "util/spinlock.hpp"

namespace lci
{

struct am_rdv_gate_t {
  // a request's bytes as they arrived (the wire header and the RTS)
  static constexpr size_t kMsgBytes = 72;
  struct msg_t {
    alignas(8) unsigned char bytes[kMsgBytes];
  };

  size_t limit = 0;  // bytes; 0: no bound, nothing below is used
  // the messages being received now (started, not complete): their count
  // (above kCountShift) and bytes (below)
  static constexpr unsigned kCountShift = 48;
  static constexpr uint64_t kOne = uint64_t(1) << kCountShift;
  static constexpr uint64_t kBytesMask = kOne - 1;
  std::atomic<uint64_t> state{0};
  // requests waiting (also counted in the device's nops_pending)
  std::atomic<size_t> nwaiting{0};
  // a start of the waiting requests is queued in the device's backlog
  std::atomic<bool> kicked{false};
  util::spinlock_t lock;
  std::deque<msg_t> waiting;  // under lock, in arrival order

  // Takes a message of n bytes in if it fits the bound, or if none is in
  // flight: a message larger than the bound goes alone.
  bool try_enter(size_t n)
  {
    uint64_t cur = state.load(std::memory_order_seq_cst);
    do {
      if (cur != 0 && (cur & kBytesMask) + n > limit) return false;
    } while (!state.compare_exchange_weak(cur, cur + kOne + n,
                                          std::memory_order_seq_cst));
    return true;
  }
  // a message of n bytes let in is complete
  void leave(size_t n) { state.fetch_sub(kOne + n, std::memory_order_seq_cst); }
  bool idle() const { return state.load(std::memory_order_seq_cst) == 0; }
};

}  // namespace lci

#endif  // LCI_RESOURCE_AM_RDV_GATE_HPP
