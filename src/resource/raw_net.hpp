// The raw network layer's state on a device (net_post_* and net_poll_cq,
// src/core/net_post.cpp): the record of each raw operation in flight, and
// the completions of operations the backend finished inside their posting
// call, which net_poll_cq reports before it polls the backend.
//
// A raw operation hands the backend a tagged context (the record's address
// with bit 0 set): the library's own contexts (packets, transfer
// operations) are aligned, so a completion polled by the library's progress
// on a raw device is recognized and dropped (raw_net_t::drop) instead of
// being taken for one of the library's.
#ifndef LCI_RESOURCE_RAW_NET_HPP
#define LCI_RESOURCE_RAW_NET_HPP

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <deque>

#include "lci.hpp"
#include "util/spinlock.hpp"

namespace lci
{

// One raw operation in flight.
struct raw_op_t {
  net_opcode_t opcode;  // what its completion reports
  int rank;             // the peer (-1: a receive)
  void* user_context;
  size_t size;
  // net_post_puts / net_post_putImms: the copy the write reads from, freed
  // at its completion, which is not reported (the post said done)
  void* staging = nullptr;

  void* tagged()
  {
    return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(this) | 1);
  }
  static bool is_tagged(const void* ctx)
  {
    return (reinterpret_cast<uintptr_t>(ctx) & 1) != 0;
  }
  static raw_op_t* untag(void* ctx)
  {
    return reinterpret_cast<raw_op_t*>(reinterpret_cast<uintptr_t>(ctx) &
                                       ~uintptr_t(1));
  }
  // frees the record of a tagged context and its staging copy
  static void drop(void* ctx)
  {
    raw_op_t* op = untag(ctx);
    std::free(op->staging);
    delete op;
  }
};

class raw_net_t
{
 public:
  // the device carries raw operations: the library's pollers other than
  // its owner's (attentive progress, the poller of free_device) leave it
  // alone, so that they never take a raw message or completion
  void mark() { used_.store(true, std::memory_order_relaxed); }
  bool in_use() const { return used_.load(std::memory_order_relaxed); }
  // a completion to report at the next net_poll_cq
  void push(const net_status_t& s)
  {
    util::spin_guard_t g(lock_);
    done_.push_back(s);
    nonempty_.store(true, std::memory_order_release);
  }
  // up to max of them into out (null: dropped); returns how many
  size_t pop(net_status_t* out, size_t max)
  {
    if (max == 0 || !nonempty_.load(std::memory_order_acquire)) return 0;
    util::spin_guard_t g(lock_);
    size_t n = 0;
    for (; n < max && !done_.empty(); ++n) {
      if (out) out[n] = done_.front();
      done_.pop_front();
    }
    nonempty_.store(!done_.empty(), std::memory_order_release);
    return n;
  }

 private:
  util::spinlock_t lock_;
  std::atomic<bool> used_{false};
  std::atomic<bool> nonempty_{false};
  std::deque<net_status_t> done_;
};

}  // namespace lci

#endif  // LCI_RESOURCE_RAW_NET_HPP
