// The single-producer single-consumer message ring of the native shared-
// memory backend (src/net/shm/device.hpp). The ring lives in shared memory (the
// receiver's segment); each side keeps its own state in private memory.
//
// Layout: a power-of-two array of 32-byte slots, two to a cache line. A
// message is a header slot followed by as many slots as its payload needs:
//
//   bytes 0..7   the header word, written LAST by the producer with one
//                64-bit store, a release store (for the payload) or, when
//                the doorbell protocol needs it (publish_t::seq_cst,
//                doorbell.hpp), a seq_cst store (on x86 a locked
//                instruction per message):
//                  bits  0..31  stamp: 2 * position + 1, modulo 2^32
//                               (positions count slots since the ring was
//                               created and never wrap; a stamp is odd)
//                  bits 32..59  payload length (below 2^28)
//                  bits 60..63  type (kPad: skip to the end of the array)
//   bytes 8..    payload, contiguous, continuing into the following slots
//
// so a message of up to 24 bytes (an 8-byte LCI message with its 16-byte
// header is 24) is one slot, and two of them share a cache line: a stream
// of small messages moves half a line per message from producer to
// consumer, a ping-pong still one line per direction. A message never
// wraps: when it does not fit before the end of the array the producer
// first writes a pad message covering the rest of it.
//
// The consumer reads the header word at its position with a seq_cst load
// (an acquire load that also takes part in the doorbell's proof; a plain
// load on x86); a stamp equal to its position's means a message is there
// (and its payload is visible). What the consumer finds at a position
// before the message arrives is never a stamp: before publishing a message
// (or a pad), the producer writes kPoison (0, never a stamp: stamps are
// odd) over the first word of the slot that follows it, the next header
// position, so that slot's older content (a continuation's payload bytes,
// which could pass for any stamp, or a header of an earlier lap) is gone
// before the consumer can reach it; the release store of the header orders
// the poison before it. That word then changes only when the producer
// publishes the message at that position (payload never reaches a slot's
// first word before the slot's own position is consumed: a message's
// continuation slots are positions the consumer skips). The consumer
// writes nothing into the ring. A zero-filled ring holds no message.
//
// Flow control: the consumer's head (the position after its last consumed
// message) is published to shared memory with a release store, in batches:
// when a quarter of the ring has been consumed since the last publication,
// and whenever the consumer calls publish() (the backend does at the end of
// every poll). The producer writes a message's slots and the slot after
// them, so it keeps one slot free: a message goes in when its slots and the
// one after them are all consumed slots of the previous lap. A message the
// consumer takes in place (take) is lent, not consumed: nothing is published
// while a message is lent, and publish() then hands the slots of every message
// taken and popped so far back to the producer at once (one store, whatever the
// messages' sizes and the order in which the caller finished with them).
// The producer caches the head and re-reads it (acquire) only when the
// ring looks full. No atomic read-modify-write anywhere.
//
// Thread safety: one producer and one consumer at a time (the backend holds
// a try-lock per side).
#ifndef LCI_NET_SHM_RING_HPP
#define LCI_NET_SHM_RING_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "util/copy.hpp"

namespace lci::net::shm
{

constexpr size_t kSlot = 32;
constexpr size_t kRingHeader = 8;
constexpr uint16_t kPad = 15;
constexpr uint64_t kPoison = 0;
// the largest payload length a header word holds (the backend keeps its
// rings below 128 MiB, so a message, at most half a ring, always fits)
constexpr uint64_t kMaxLength = (uint64_t(1) << 28) - 1;

// How a producer writes a message's header word (the doorbell's two
// protocols, doorbell.hpp): a seq_cst store, or a release store whose
// StoreLoad barrier the consumer supplies with a membarrier when it cools
// the ring.
enum class publish_t : uint8_t { seq_cst, release };

struct alignas(32) slot_t {
  uint64_t word;  // the header word of a message that starts here
  unsigned char payload[kSlot - kRingHeader];
};
static_assert(sizeof(slot_t) == kSlot, "two slots to a cache line");

inline uint32_t stamp_of(uint64_t pos)
{
  return static_cast<uint32_t>(pos << 1) | 1u;
}
inline uint64_t header_word(uint64_t pos, size_t len, uint16_t type)
{
  return stamp_of(pos) | (static_cast<uint64_t>(len) << 32) |
         (static_cast<uint64_t>(type) << 60);
}
inline uint32_t length_of(uint64_t word)
{
  return static_cast<uint32_t>((word >> 32) & kMaxLength);
}
inline uint16_t type_of(uint64_t word)
{
  return static_cast<uint16_t>(word >> 60);
}

// The consumer's published head: one cache line of its own, in shared memory.
struct alignas(64) ring_ctrl_t {
  uint64_t head;
  unsigned char pad_[64 - sizeof(uint64_t)];
};

inline uint64_t load_acquire(const uint64_t* p)
{
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
inline void store_release(uint64_t* p, uint64_t v)
{
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
inline uint64_t load_seq_cst(const uint64_t* p)
{
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}
inline void store_seq_cst(uint64_t* p, uint64_t v)
{
  __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

// The producer asks for the line kPrefetchAhead slots (12 lines) past its
// tail in exclusive state after each push, so a stream of pushes finds its
// slots already owned instead of stalling on each one's invalidation in
// turn.
// PREFETCHW exists on AMD64 since its first processors and on Intel since
// Broadwell (CPUID 0x80000001 ECX bit 8); elsewhere a read prefetch.
constexpr uint64_t kPrefetchAhead = 24;
// ring_producer_t::own_next runs after a message of more than kOwnMin
// slots (four lines; for a shorter message the few ownership requests it
// moves off the path do not pay for its setup) and takes at most kOwnAhead
// slots ahead (8 KiB, 128 lines) for a next message of the same size.
constexpr uint64_t kOwnMin = 8;
constexpr uint64_t kOwnAhead = 256;
inline bool cpu_has_prefetchw()
{
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8));
#else
  return false;
#endif
}
inline void prefetch_for_write(const void* p, bool prefetchw)
{
#if defined(__x86_64__)
  if (__builtin_expect(prefetchw, 1)) {
    asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
    return;
  }
#endif
  (void)prefetchw;
  __builtin_prefetch(p, 1, 3);
}

// slots needed by a message of `len` payload bytes
constexpr uint64_t slots_for(size_t len)
{
  return (kRingHeader + len + kSlot - 1) / kSlot;
}

class ring_producer_t
{
 public:
  ring_producer_t() = default;
  ring_producer_t(slot_t* slots, uint64_t nslots, ring_ctrl_t* ctrl,
                  publish_t mode = publish_t::seq_cst)
      : slots_(slots),
        nslots_(nslots),
        ctrl_(ctrl),
        mode_(mode),
        prefetchw_(cpu_has_prefetchw())
  {
  }
  publish_t mode() const { return mode_; }
  // the largest payload a message may carry (half the ring)
  size_t max_payload() const { return nslots_ / 2 * kSlot - kRingHeader; }

  // Whether a message of `len` bytes fits now (the next push of up to `len`
  // bytes then succeeds: only the consumer changes the free space, and it
  // only grows it). One slot stays free: the slot after the message, which
  // the push poisons.
  bool fits(size_t len)
  {
    uint64_t need = needed(len);
    if (tail_ + need - cached_head_ < nslots_) return true;
    cached_head_ = load_acquire(&ctrl_->head);
    return tail_ + need - cached_head_ < nslots_;
  }

  // Appends a message of type `type` (below kPad) whose payload is
  // a[0..alen) followed by b[0..blen); false (nothing written) when the
  // ring is full.
  [[gnu::always_inline]] bool push(uint16_t type, const void* a, size_t alen,
                                   const void* b = nullptr, size_t blen = 0)
  {
    const size_t len = alen + blen;
    const uint64_t k = slots_for(len);
    uint64_t idx = tail_ & (nslots_ - 1);
    // the common case, checked on the cached head: no pad, room for the
    // message and the slot after it
    if (__builtin_expect(
            idx + k > nslots_ || tail_ + k - cached_head_ >= nslots_, 0)) {
      if (!make_room(len)) return false;
      idx = tail_ & (nslots_ - 1);
    }
    slot_t* s = &slots_[idx];
    // (the payload runs on past the header slot: not s->payload, an array
    // of one slot's bytes)
    unsigned char* p = reinterpret_cast<unsigned char*>(s) + kRingHeader;
    if (alen == 16) {  // the core's wire header: a fixed copy, inline
      std::memcpy(p, a, 16);
      p += 16;
    } else if (alen) {
      util::copy_bytes(p, a, alen);
      p += alen;
    }
    util::copy_bytes(p, b, blen);
    const uint64_t word = header_word(tail_, len, type);
    tail_ += k;
    poison(tail_);
    publish(s, word);
    prefetch_for_write(&slots_[(tail_ + kPrefetchAhead) & (nslots_ - 1)],
                       prefetchw_);
    if (k > kOwnMin) own_next(k);
    return true;
  }

  // After a push of k slots: the lines a next message of k slots would
  // take, from the line after the one holding the new tail (the consumer
  // polls that one for the next header, so taking it would only bounce
  // it) to the slot that message would poison, at most kOwnAhead slots,
  // and only within the free room. A message of many lines otherwise
  // waits, before its header can be seen, for each of its lines to be
  // taken back from the consumer that read it on the ring's last lap; so
  // the next message (a ping-pong's reply comes between the two) finds
  // them owned, as a stream of one-slot messages does with the prefetch
  // kPrefetchAhead slots ahead.
  void own_next(uint64_t k)
  {
    if (k > kOwnAhead) k = kOwnAhead;
    if (tail_ + k + 1 - cached_head_ > nslots_) return;
    const uint64_t mask = nslots_ - 1;
    const uint64_t i = ((tail_ | 1) + 1) & mask;  // even: a line's start
    const uint64_t j = (tail_ + k) & mask;
    if (i <= j) {
      own(&slots_[i], &slots_[j] + 1);
    } else {
      own(&slots_[i], slots_ + nslots_);
      own(slots_, &slots_[j] + 1);
    }
  }
  void own(const slot_t* p, const slot_t* e) const
  {
    if (__builtin_expect(prefetchw_, 1))
      own_lines<true>(p, e);
    else
      own_lines<false>(p, e);
  }
  // the lines from p (a line's start) to e, four to a step: the loop's
  // instructions are most of what own_next adds to a send
  template <bool W>
  static void own_lines(const slot_t* p, const slot_t* e)
  {
    for (; e - p >= 8; p += 8) {
      prefetch_for_write(p, W);
      prefetch_for_write(p + 2, W);
      prefetch_for_write(p + 4, W);
      prefetch_for_write(p + 6, W);
    }
    for (; p < e; p += 2) prefetch_for_write(p, W);
  }

  // Whether a one-slot message fits on the cached head (push_one's
  // precondition; when false, push() re-reads the head).
  bool one_fits() const { return tail_ + 1 - cached_head_ < nslots_; }

  // push() of a one-slot message when one_fits(): a 16-byte `a` (the
  // core's wire header) and up to 8 bytes of `b`, copied with fixed-size
  // moves, no call. (One slot never needs a pad: the array is a whole
  // number of slots.) The state is read once, before the stores into the
  // ring, which the compiler must assume may alias it.
  [[gnu::always_inline]] void push_one(uint16_t type, const void* a,
                                       const void* b, size_t blen)
  {
    const uint64_t tail = tail_;
    const uint64_t mask = nslots_ - 1;
    slot_t* const slots = slots_;
    const publish_t mode = mode_;
    const bool prefetchw = prefetchw_;
    slot_t* s = &slots[tail & mask];
    std::memcpy(s->payload, a, 16);
    if (__builtin_expect(blen == 8, 1))
      std::memcpy(s->payload + 16, b, 8);
    else
      util::copy_small(s->payload + 16, b, blen);
    tail_ = tail + 1;
    __atomic_store_n(&slots[(tail + 1) & mask].word, kPoison, __ATOMIC_RELAXED);
    publish(s, header_word(tail, 16 + blen, type), mode);
    prefetch_for_write(&slots[(tail + 1 + kPrefetchAhead) & mask], prefetchw);
  }

  // the position after the last pushed message
  uint64_t tail() const { return tail_; }
  // whether the consumer has consumed (and published) every slot before
  // `pos`
  bool consumed(uint64_t pos) const
  {
    return load_acquire(&ctrl_->head) >= pos;
  }

 private:
  // push's uncommon case: false when a message of `len` bytes does not fit
  // now; else pads to the end of the array if the message would cross it
  [[gnu::noinline]] bool make_room(size_t len)
  {
    if (!fits(len)) return false;
    uint64_t idx = tail_ & (nslots_ - 1);
    if (idx + slots_for(len) > nslots_) {
      // pad to the end of the array, then start over at 0 (poisoned first,
      // as after any message)
      const uint64_t word = header_word(tail_, (nslots_ - idx) * kSlot, kPad);
      tail_ += nslots_ - idx;
      poison(tail_);
      publish(&slots_[idx], word);
    }
    return true;
  }

  // the header position `pos`, the slot after the message being pushed:
  // no longer the consumer's (the room check keeps a slot free for it)
  void poison(uint64_t pos)
  {
    __atomic_store_n(&slots_[pos & (nslots_ - 1)].word, kPoison,
                     __ATOMIC_RELAXED);
  }

  // the message at the tail is complete: its header word, written last
  static void publish(slot_t* s, uint64_t word, publish_t mode)
  {
    if (__builtin_expect(mode == publish_t::release, 1))
      store_release(&s->word, word);
    else
      store_seq_cst(&s->word, word);
  }
  void publish(slot_t* s, uint64_t word) { publish(s, word, mode_); }

  // slots a message of `len` bytes takes from the tail, padding included
  uint64_t needed(size_t len) const
  {
    uint64_t k = slots_for(len);
    uint64_t idx = tail_ & (nslots_ - 1);
    return idx + k > nslots_ ? (nslots_ - idx) + k : k;
  }

  slot_t* slots_ = nullptr;
  uint64_t nslots_ = 0;
  ring_ctrl_t* ctrl_ = nullptr;
  uint64_t tail_ = 0;
  uint64_t cached_head_ = 0;
  publish_t mode_ = publish_t::seq_cst;
  bool prefetchw_ = false;  // the CPU has PREFETCHW
};

class ring_consumer_t
{
 public:
  struct msg_t {
    uint16_t type;
    uint32_t length;
    const unsigned char* payload;
  };

  ring_consumer_t() = default;
  ring_consumer_t(slot_t* slots, uint64_t nslots, ring_ctrl_t* ctrl)
      : slots_(slots), nslots_(nslots), ctrl_(ctrl)
  {
  }

  // The message at the head, if one is there (pads are skipped); it stays
  // until pop() or take().
  bool peek(msg_t* m)
  {
    for (;;) {
      slot_t* s = &slots_[head_ & (nslots_ - 1)];
      const uint64_t w = load_seq_cst(&s->word);
      if (static_cast<uint32_t>(w) != stamp_of(head_)) return false;
      if (type_of(w) == kPad) {
        head_ += length_of(w) / kSlot;
        maybe_publish();
        continue;
      }
      m->type = type_of(w);
      m->length = length_of(w);
      m->payload = s->payload;
      return true;
    }
  }

  // Consumes the message peek() returned.
  void pop(const msg_t& m)
  {
    last_slots_ = slots_for(m.length);
    head_ += last_slots_;
    maybe_publish();
  }

  // Moves past the message peek() returned and lends it: its slots stay as
  // they are, and nothing is published, until publish(), which the caller
  // calls once done with the bytes of every message it took.
  void take(const msg_t& m)
  {
    last_slots_ = slots_for(m.length);
    head_ += last_slots_;
    lent_ = true;
  }

  // the slots of the last message popped or taken
  uint64_t last_slots() const { return last_slots_; }

  // whether messages taken in place wait for publish()
  bool lent() const { return lent_; }

  // Makes the consumed space available to the producer, that of lent
  // messages included: the caller no longer reads any of them.
  void publish()
  {
    lent_ = false;
    if (published_ != head_) {
      published_ = head_;
      store_release(&ctrl_->head, head_);
    }
  }

  uint64_t head() const { return head_; }

  // The header word at the head: kPoison until a message (or a pad) is
  // published there, so a load of it alone says whether peek() would find
  // something (device.hpp's quiet poll reads it without the consumer lock).
  const uint64_t* head_word() const
  {
    return &slots_[head_ & (nslots_ - 1)].word;
  }

 private:
  void maybe_publish()
  {
    if (!lent_ && head_ - published_ >= nslots_ / 4) publish();
  }

  slot_t* slots_ = nullptr;
  uint64_t nslots_ = 0;
  ring_ctrl_t* ctrl_ = nullptr;
  uint64_t head_ = 0;
  uint64_t published_ = 0;
  uint64_t last_slots_ = 0;
  bool lent_ = false;
};

}  // namespace lci::net::shm

#endif  // LCI_NET_SHM_RING_HPP
