// The native shared-memory backend's SPSC ring (src/net/shm/ring.hpp) on its
// own, in one process: a producer thread and a consumer thread pass millions
// of messages of random sizes (0 bytes to the ring's maximum, so the array
// wraps and pads all the time) through a small ring. Checked: every message
// arrives once, in order, with its type, length and every payload byte;
// push never blocks (a full ring is a false return) and the producer only
// ever sees the space the consumer published.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "net/shm/ring.hpp"
#include "tsan.hpp"

namespace
{

using lci::net::shm::kSlot;
using lci::net::shm::ring_consumer_t;
using lci::net::shm::ring_ctrl_t;
using lci::net::shm::ring_producer_t;
using lci::net::shm::slot_t;

// Message seq's payload is table[offset_of(seq) ..] of a random table twice
// the largest payload long: every message has different bytes.
std::vector<unsigned char> make_table(size_t max)
{
  std::vector<unsigned char> t(2 * max + 1);
  std::mt19937_64 rng(42);
  for (auto& c : t) c = static_cast<unsigned char>(rng());
  return t;
}
inline size_t offset_of(uint64_t seq, size_t max)
{
  return (seq * 2654435761u) % (max + 1);
}

// the length of message seq: mostly small, some up to `max`
size_t length_of(std::mt19937_64& rng, size_t max)
{
  uint64_t r = rng();
  switch (r % 16) {
    case 0:  // up to the largest
      return (r >> 8) % (max + 1);
    case 1:
    case 2:
    case 3:
      return (r >> 8) % 2000 < max ? (r >> 8) % 2000 : max;
    case 4:
    case 5:
    case 6:
    case 7:
      return (r >> 8) % 200;
    default:
      return (r >> 8) % 49;  // one slot
  }
}

struct ring_mem_t {
  explicit ring_mem_t(uint64_t nslots)
      : slots(new slot_t[nslots]()), ctrl(new ring_ctrl_t()), n(nslots)
  {
  }
  std::unique_ptr<slot_t[]> slots;
  std::unique_ptr<ring_ctrl_t> ctrl;
  uint64_t n;
};

void run(uint64_t nslots, uint64_t count, uint64_t seed)
{
  ring_mem_t mem(nslots);
  ring_producer_t prod(mem.slots.get(), nslots, mem.ctrl.get());
  ring_consumer_t cons(mem.slots.get(), nslots, mem.ctrl.get());
  const size_t max = prod.max_payload();
  ASSERT_EQ(max, nslots / 2 * kSlot - lci::net::shm::kRingHeader);
  const std::vector<unsigned char> table = make_table(max);
  std::atomic<uint64_t> bad{0};
  std::atomic<uint64_t> full{0};
  std::thread producer([&] {
    std::mt19937_64 rng(seed);
    for (uint64_t seq = 0; seq < count; ++seq) {
      size_t len = length_of(rng, max);
      const unsigned char* buf = table.data() + offset_of(seq, max);
      // split the payload in two parts at a random point (push gathers)
      size_t cut = len ? rng() % (len + 1) : 0;
      uint16_t type = static_cast<uint16_t>(seq % 15);  // below kPad
      while (!prod.push(type, buf, cut, buf + cut, len - cut)) {
        full.fetch_add(1, std::memory_order_relaxed);
        std::this_thread::yield();
      }
    }
  });
  std::mt19937_64 rng(seed);
  uint64_t polls = 0;
  for (uint64_t seq = 0; seq < count; ++seq) {
    size_t len = length_of(rng, max);
    if (len) rng();  // the cut
    ring_consumer_t::msg_t m;
    while (!cons.peek(&m)) {
      cons.publish();
      if (++polls % 64 == 0) std::this_thread::yield();
    }
    bool ok = m.length == len && m.type == seq % 15;
    if (ok && len)
      ok = std::memcmp(m.payload, table.data() + offset_of(seq, max), len) == 0;
    if (!ok && bad.fetch_add(1) < 5)
      ADD_FAILURE() << "message " << seq << ": length " << m.length << " (want "
                    << len << "), type " << m.type;
    cons.pop(m);
    // now and then publish early, as a poll's end does
    if (seq % 13 == 0) cons.publish();
  }
  producer.join();
  ring_consumer_t::msg_t m;
  EXPECT_FALSE(cons.peek(&m)) << "a message beyond the last one";
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_EQ(cons.head(), prod.tail());
  std::printf("%llu messages through %llu slots, ring full %llu times\n",
              static_cast<unsigned long long>(count),
              static_cast<unsigned long long>(nslots),
              static_cast<unsigned long long>(full.load()));
}

TEST(ShmRing, SmallRingRandomSizes) { run(64, kTsan ? 200000 : 2000000, 1); }

TEST(ShmRing, LargeRingRandomSizes) { run(2048, kTsan ? 200000 : 2000000, 2); }

// A 16-slot ring with its producer and consumer, for the cases below.
struct small_ring_t {
  static constexpr uint64_t n = 16;
  ring_mem_t mem{n};
  ring_producer_t prod{mem.slots.get(), n, mem.ctrl.get()};
  ring_consumer_t cons{mem.slots.get(), n, mem.ctrl.get()};
};

// Single-threaded edge cases: empty ring, exactly full ring, a message that
// needs padding, zero-length messages, the largest message.
TEST(ShmRing, FullAndWrap)
{
  small_ring_t ring;
  ring_mem_t& mem = ring.mem;
  ring_producer_t& prod = ring.prod;
  ring_consumer_t& cons = ring.cons;
  ring_consumer_t::msg_t m;
  EXPECT_FALSE(cons.peek(&m));
  // 16 one-slot messages fill the ring; the 17th does not fit
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(prod.push(1, &i, sizeof(i)));
  int x = 99;
  EXPECT_FALSE(prod.push(1, &x, sizeof(x)));
  // consumed but not published: still full
  ASSERT_TRUE(cons.peek(&m));
  cons.pop(m);
  EXPECT_FALSE(prod.push(1, &x, sizeof(x)));
  cons.publish();
  EXPECT_TRUE(prod.push(1, &x, sizeof(x)));
  for (int i = 1; i < 17; ++i) {
    ASSERT_TRUE(cons.peek(&m));
    int v;
    std::memcpy(&v, m.payload, sizeof(v));
    EXPECT_EQ(m.length, sizeof(v));
    EXPECT_EQ(v, i == 16 ? 99 : i);
    cons.pop(m);
  }
  EXPECT_FALSE(cons.peek(&m));
  cons.publish();
  // at index 1 now: a 8-slot message fits before the end; then a 8-slot one
  // needs a pad of 7 slots (15 slots in all, 16 free)
  std::vector<unsigned char> big(prod.max_payload(), 0xab);
  EXPECT_EQ(big.size(), 8 * kSlot - lci::net::shm::kRingHeader);
  ASSERT_TRUE(prod.push(2, big.data(), big.size()));
  EXPECT_FALSE(prod.push(4, big.data(), big.size()));  // 8 free
  ASSERT_TRUE(cons.peek(&m));
  EXPECT_EQ(m.length, big.size());
  cons.pop(m);
  cons.publish();
  ASSERT_TRUE(prod.push(4, big.data(), big.size()));
  ASSERT_TRUE(prod.push(3, nullptr, 0));
  ASSERT_TRUE(cons.peek(&m));
  EXPECT_EQ(m.type, 4);
  EXPECT_EQ(m.payload, mem.slots[0].payload);  // padded to the start
  cons.pop(m);
  ASSERT_TRUE(cons.peek(&m));
  EXPECT_EQ(m.length, 0u);
  EXPECT_EQ(m.type, 3);
  cons.pop(m);
  EXPECT_FALSE(cons.peek(&m));
  // the big messages' continuation slots were poisoned: an all-0xab payload
  // never looks like a stamp
  for (uint64_t i = 1; i < 8; ++i)
    EXPECT_EQ(mem.slots[i].word, lci::net::shm::kPoison);
  // and the pad's (slots 10..15; 9 held its header)
  for (uint64_t i = 10; i < 16; ++i)
    EXPECT_EQ(mem.slots[i].word, lci::net::shm::kPoison) << i;
}

// Messages lent in place (take): their bytes stay and their space is not
// the producer's until given back and published; a one-slot message
// consumed meanwhile publishes nothing; give_back poisons a lent message's
// continuation slots (its header slot keeps its stamp, an older lap's).
TEST(ShmRing, LentUntilGivenBack)
{
  small_ring_t ring;
  ring_mem_t& mem = ring.mem;
  ring_producer_t& prod = ring.prod;
  ring_consumer_t& cons = ring.cons;
  ring_consumer_t::msg_t m, lent;
  std::vector<unsigned char> big(4 * kSlot - lci::net::shm::kRingHeader, 0xcd);
  ASSERT_TRUE(prod.push(1, big.data(), big.size()));  // slots 0..3
  int x = 7;
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(prod.push(1, &x, sizeof(x)));
  EXPECT_FALSE(prod.push(1, &x, sizeof(x)));  // full
  ASSERT_TRUE(cons.peek(&lent));
  cons.take(lent);
  EXPECT_TRUE(cons.lent());
  // ring-sized budget of one-slot pops (a quarter would publish) while lent
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(cons.peek(&m));
    cons.pop(m);
  }
  EXPECT_FALSE(cons.peek(&m));
  EXPECT_FALSE(prod.push(1, &x, sizeof(x)));  // nothing published yet
  EXPECT_EQ(lent.payload[0], 0xcd);
  EXPECT_EQ(lent.payload[big.size() - 1], 0xcd);
  ring_consumer_t::give_back(lent);
  for (uint64_t i = 1; i < 4; ++i)
    EXPECT_EQ(mem.slots[i].word, lci::net::shm::kPoison) << i;
  cons.publish();
  EXPECT_FALSE(cons.lent());
  EXPECT_TRUE(prod.push(1, &x, sizeof(x)));
  ASSERT_TRUE(cons.peek(&m));
  EXPECT_EQ(m.payload, mem.slots[0].payload);
}

// A lent payload that holds, where the next lap's header words go, the
// very words that would announce messages there: given back (poisoned),
// never taken for a message when the consumer reaches those slots.
TEST(ShmRing, LentPayloadThatLooksLikeStampsIsNeverAMessage)
{
  small_ring_t ring;
  const uint64_t n = small_ring_t::n;
  ring_producer_t& prod = ring.prod;
  ring_consumer_t& cons = ring.cons;
  ring_consumer_t::msg_t m;
  // a 4-slot message at 0..3 whose slots 1..3 begin with the header words
  // of positions 17..19 (the next lap)
  std::vector<unsigned char> p(4 * kSlot - lci::net::shm::kRingHeader);
  for (uint64_t i = 1; i < 4; ++i) {
    const uint64_t w = lci::net::shm::header_word(n + i, 8, 1);
    std::memcpy(&p[i * kSlot - lci::net::shm::kRingHeader], &w, sizeof(w));
  }
  ASSERT_TRUE(prod.push(1, p.data(), p.size()));
  ASSERT_TRUE(cons.peek(&m));
  cons.take(m);
  ring_consumer_t::give_back(m);
  cons.publish();
  // one-slot messages up to position 16, then the consumer at 17 (slot 1)
  int x = 5;
  for (int i = 4; i < 17; ++i) {
    ASSERT_TRUE(prod.push(1, &x, sizeof(x)));
    ASSERT_TRUE(cons.peek(&m));
    cons.pop(m);
    cons.publish();
  }
  EXPECT_FALSE(cons.peek(&m));
  EXPECT_EQ(cons.head(), 17u);
}

// poison_continuations writes kPoison over the first word of slots 1 to
// k - 1 and nothing else, for every k around its unrolled step of four.
TEST(ShmRing, PoisonsExactlyTheContinuationSlots)
{
  constexpr uint64_t kMark = 0x5a5a5a5a5a5a5a5bull;
  for (uint64_t k = 1; k <= 13; ++k) {
    std::vector<slot_t> slots(k + 2);
    for (slot_t& s : slots) {
      s.word = kMark;
      std::memset(s.payload, 0x77, sizeof(s.payload));
    }
    lci::net::shm::poison_continuations(slots.data(), k);
    for (uint64_t i = 0; i < slots.size(); ++i) {
      const bool continuation = i >= 1 && i < k;
      EXPECT_EQ(slots[i].word, continuation ? lci::net::shm::kPoison : kMark)
          << "k " << k << ", slot " << i;
      for (unsigned char c : slots[i].payload) ASSERT_EQ(c, 0x77);
    }
  }
}

// util::copy_small (the ring's push and small deliveries use it): every
// length up to 32 at every source and destination alignment copies exactly
// its bytes, none around them.
TEST(CopySmall, EveryLengthExactlyItsBytes)
{
  unsigned char src[64 + 8], dst[64 + 8];
  for (size_t i = 0; i < sizeof(src); ++i)
    src[i] = static_cast<unsigned char>(i * 7 + 1);
  for (size_t n = 0; n <= 32; ++n)
    for (size_t so = 0; so < 8; ++so)
      for (size_t d = 0; d < 8; ++d) {
        std::memset(dst, 0xee, sizeof(dst));
        lci::util::copy_small(dst + 16 + d, src + 16 + so, n);
        for (size_t i = 0; i < sizeof(dst); ++i) {
          const bool inside = i >= 16 + d && i < 16 + d + n;
          const unsigned char want =
              inside ? src[16 + so + (i - 16 - d)] : 0xee;
          ASSERT_EQ(dst[i], want) << "n " << n << " src offset " << so
                                  << " dst offset " << d << " byte " << i;
        }
      }
}

}  // namespace
