// The doorbell of the native shared-memory backend (src/net/shm/device.hpp):
// how a receiver learns which of its inbound rings have messages without
// peeking every ring, and how a sender avoids a locked instruction per
// message.
//
// A doorbell word holds one bit per sender ring (64 senders per word, each
// word on its own cache line in the receiver's segment).
//
//   sender (ring):   push the message (the stamp written last, ring.hpp),
//                    load the word; if its bit is clear, fetch_or the bit.
//   receiver:        a set bit makes its ring "hot": the receiver leaves the
//                    bit set and peeks the ring at every poll (so a busy
//                    sender finds its bit set and only reads the word).
//                    After many empty polls it cools rings down (cool):
//                    fetch_and clears their bits, then one more peek of
//                    each; a message found there is drained at once.
//
// No message may be missed: a sender whose load (B) still sees its bit set
// must have its stamp store (W) seen by the receiver's last peek (L), which
// comes after the clearing (X). That is the store-buffering (Dekker) shape
// W;B against X;L and needs a StoreLoad barrier on both sides. Two ways to
// pay for it, chosen per pair of ranks (publish_t):
//
//   seq_cst:  W is a seq_cst store (on x86 the one locked instruction per
//             message), B, X and L are seq_cst. All four lie in one total
//             order S agreeing with program order: X < L, W < B. If W < L
//             in S, L reads W or a later stamp; so L < W, hence
//             X < L < W < B and B sees the bit clear (or set again by a
//             later fetch_or), and the sender rings. ThreadSanitizer models
//             this.
//   release:  W is a plain release store, followed by a compiler barrier
//             and B: nothing locked per message, so the producer never
//             waits for the slot's cache line (docs/PERFORMANCE_LOG.md).
//             The receiver pays instead, once per cool-down: after X it
//             calls membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), which
//             runs a full barrier on every running thread of every process
//             registered for it (every sender in this mode registered
//             before its first push); a thread not running has passed
//             through the kernel's context switch, a full barrier. So
//             every sender thread executes a full barrier F between the
//             start of the membarrier (after X) and its return (before
//             L). If B comes after F in that thread, B sees X; if B comes
//             before F, so does W, which is then visible to all before
//             the membarrier returns, so L sees it. This is the asymmetric
//             fence of RCU-like schemes; the cost is one system call (an
//             interrupt of each other busy core) per cool-down, which
//             device.hpp makes rare (65,536 empty polls of a hot ring), and
//             a cool-down of several rings of a word shares one.
//
// A receiver that can issue the membarrier says so in its segment header; a
// sender uses release for that receiver when it also registered its own
// process (asym_fence_register) and the attribute shm_membarrier is on.
// Everything else uses seq_cst, and the receiver's membarrier (when it
// issues one) keeps the seq_cst senders' proof intact.
#ifndef LCI_NET_SHM_DOORBELL_HPP
#define LCI_NET_SHM_DOORBELL_HPP

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#include "net/shm/ring.hpp"

namespace lci::net::shm
{

// Registers this process for global expedited membarriers (once; later
// calls return the first answer): true when the kernel offers them.
inline bool asym_fence_register()
{
#ifdef __NR_membarrier
  static const bool ok = [] {
    long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (q < 0 || !(q & MEMBARRIER_CMD_GLOBAL_EXPEDITED)) return false;
    return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0,
                   0) == 0;
  }();
  return ok;
#else
  return false;
#endif
}

// The heavy side: a full barrier on every running thread of every process
// registered by asym_fence_register. Only called by a receiver whose
// asym_fence_register returned true; false if the kernel refused it after
// all (then nothing is proven for plain-stamp senders).
inline bool asym_fence_heavy()
{
  bool ok = false;
#ifdef __NR_membarrier
  ok = syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0;
#endif
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  return ok;
}

// Sender, after a push with stamps of kind `mode`: sets `bit` in `word`
// unless the receiver is known to be polling the ring.
inline void doorbell_ring(uint64_t* word, uint64_t bit, publish_t mode)
{
  // the light side of the asymmetric fence: keeps the compiler from
  // hoisting the load above the stamp store (x86 keeps them in order
  // except for store buffering, which the receiver's membarrier covers);
  // no instruction, so taken whatever the mode (a seq_cst stamp store
  // needs none)
  (void)mode;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (!(__atomic_load_n(word, __ATOMIC_SEQ_CST) & bit))
    __atomic_fetch_or(word, bit, __ATOMIC_RELEASE);
}

// Receiver: clears `bits` in `word` (rings it stops peeking at every poll);
// after it, a peek of each of those rings finds every message whose sender
// did not ring again. `heavy`: some sender may use publish_t::release.
// False when the membarrier failed: the receiver must then keep peeking
// those rings at every poll (hot) whatever their bits say, and stop
// cooling rings down, which stays correct (a hot ring needs no bell).
inline bool doorbell_cool(uint64_t* word, uint64_t bits, bool heavy)
{
  __atomic_fetch_and(word, ~bits, __ATOMIC_SEQ_CST);
  return !heavy || asym_fence_heavy();
}

}  // namespace lci::net::shm

#endif  // LCI_NET_SHM_DOORBELL_HPP
