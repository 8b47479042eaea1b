// The native shared-memory backend's SPSC ring (src/net/shm/ring.hpp) on its
// own, in one process: a producer thread and a consumer thread pass millions
// of messages of random sizes (0 bytes to the ring's maximum, so the array
// wraps and pads all the time) through a small ring. Checked: every message
// arrives once, in order, with its type, length and every payload byte;
// push never blocks (a full ring is a false return) and the producer only
// ever sees the space the consumer published: a message taken in place
// keeps its bytes until the consumer publishes.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <utility>
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
  // messages lent (taken in place) since the last publish, with their
  // sequence numbers: their bytes must stay as they are until it
  std::vector<std::pair<ring_consumer_t::msg_t, uint64_t>> lent;
  auto intact = [&](const ring_consumer_t::msg_t& m, uint64_t seq) {
    return m.length == 0 ||
           std::memcmp(m.payload, table.data() + offset_of(seq, max),
                       m.length) == 0;
  };
  auto publish = [&] {
    for (const auto& l : lent)
      if (!intact(l.first, l.second) && bad.fetch_add(1) < 5)
        ADD_FAILURE() << "lent message " << l.second << " overwritten";
    lent.clear();
    cons.publish();
  };
  for (uint64_t seq = 0; seq < count; ++seq) {
    size_t len = length_of(rng, max);
    if (len) rng();  // the cut
    ring_consumer_t::msg_t m;
    while (!cons.peek(&m)) {
      publish();
      if (++polls % 64 == 0) std::this_thread::yield();
    }
    bool ok = m.length == len && m.type == seq % 15 && intact(m, seq);
    if (!ok && bad.fetch_add(1) < 5)
      ADD_FAILURE() << "message " << seq << ": length " << m.length << " (want "
                    << len << "), type " << m.type;
    // one in four is lent, as the backend lends its large messages
    if (seq % 4 == 1) {
      cons.take(m);
      lent.emplace_back(m, seq);
    } else {
      cons.pop(m);
    }
    // now and then publish early, as a poll's end does
    if (seq % 13 == 0) publish();
  }
  publish();
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

// Single-threaded edge cases: empty ring, exactly full ring (all slots but
// one), a message that needs padding, zero-length messages, the largest
// message.
TEST(ShmRing, FullAndWrap)
{
  small_ring_t ring;
  ring_mem_t& mem = ring.mem;
  ring_producer_t& prod = ring.prod;
  ring_consumer_t& cons = ring.cons;
  ring_consumer_t::msg_t m;
  EXPECT_FALSE(cons.peek(&m));
  // 15 one-slot messages fill the ring (the slot after the last one stays
  // free for its poison); the 16th does not fit
  for (int i = 0; i < 15; ++i) ASSERT_TRUE(prod.push(1, &i, sizeof(i)));
  int x = 99;
  EXPECT_FALSE(prod.push(1, &x, sizeof(x)));
  // consumed but not published: still full
  ASSERT_TRUE(cons.peek(&m));
  cons.pop(m);
  EXPECT_FALSE(prod.push(1, &x, sizeof(x)));
  cons.publish();
  EXPECT_TRUE(prod.push(1, &x, sizeof(x)));
  EXPECT_FALSE(prod.push(1, &x, sizeof(x)));
  for (int i = 1; i < 16; ++i) {
    ASSERT_TRUE(cons.peek(&m));
    int v;
    std::memcpy(&v, m.payload, sizeof(v));
    EXPECT_EQ(m.length, sizeof(v));
    EXPECT_EQ(v, i == 15 ? 99 : i);
    cons.pop(m);
  }
  EXPECT_FALSE(cons.peek(&m));
  cons.publish();
  // at index 0 now: a zero-length message, then an 8-slot one (1..8); a
  // second 8-slot one needs a pad of 7 slots (9..15) and fits only once
  // the first two are consumed (15 slots taken of 16)
  std::vector<unsigned char> big(prod.max_payload(), 0xab);
  EXPECT_EQ(big.size(), 8 * kSlot - lci::net::shm::kRingHeader);
  ASSERT_TRUE(prod.push(3, nullptr, 0));
  ASSERT_TRUE(prod.push(2, big.data(), big.size()));
  EXPECT_FALSE(prod.push(4, big.data(), big.size()));
  ASSERT_TRUE(cons.peek(&m));
  EXPECT_EQ(m.length, 0u);
  cons.pop(m);
  ASSERT_TRUE(cons.peek(&m));
  EXPECT_EQ(m.length, big.size());
  EXPECT_EQ(m.payload, mem.slots[1].payload);
  cons.pop(m);
  cons.publish();
  ASSERT_TRUE(prod.push(4, big.data(), big.size()));
  // slot 8, after the padded message at 0..7, held the first message's
  // payload (0xab bytes): poisoned
  EXPECT_EQ(mem.slots[8].word, lci::net::shm::kPoison);
  ASSERT_TRUE(cons.peek(&m));
  EXPECT_EQ(m.type, 4);
  EXPECT_EQ(m.payload, mem.slots[0].payload);  // padded to the start
  cons.pop(m);
  EXPECT_FALSE(cons.peek(&m));
  cons.publish();
  ASSERT_TRUE(prod.push(3, nullptr, 0));
  ASSERT_TRUE(cons.peek(&m));
  EXPECT_EQ(m.length, 0u);
  EXPECT_EQ(m.type, 3);
  EXPECT_EQ(m.payload, mem.slots[8].payload);
  cons.pop(m);
  EXPECT_FALSE(cons.peek(&m));
}

// Messages lent in place (take): their bytes stay and their space is not
// the producer's until the consumer publishes; a one-slot message consumed
// meanwhile publishes nothing; the publish gives them back with the rest.
TEST(ShmRing, LentUntilPublished)
{
  small_ring_t ring;
  ring_mem_t& mem = ring.mem;
  ring_producer_t& prod = ring.prod;
  ring_consumer_t& cons = ring.cons;
  ring_consumer_t::msg_t m, lent;
  std::vector<unsigned char> big(4 * kSlot - lci::net::shm::kRingHeader, 0xcd);
  ASSERT_TRUE(prod.push(1, big.data(), big.size()));  // slots 0..3
  int x = 7;
  for (int i = 0; i < 11; ++i) ASSERT_TRUE(prod.push(1, &x, sizeof(x)));
  EXPECT_FALSE(prod.push(1, &x, sizeof(x)));  // full
  ASSERT_TRUE(cons.peek(&lent));
  cons.take(lent);
  EXPECT_TRUE(cons.lent());
  // ring-sized budget of one-slot pops (a quarter would publish) while lent
  for (int i = 0; i < 11; ++i) {
    ASSERT_TRUE(cons.peek(&m));
    cons.pop(m);
  }
  EXPECT_FALSE(cons.peek(&m));
  EXPECT_FALSE(prod.push(1, &x, sizeof(x)));  // nothing published yet
  for (size_t i = 0; i < big.size(); ++i) ASSERT_EQ(lent.payload[i], 0xcd);
  cons.publish();
  EXPECT_FALSE(cons.lent());
  EXPECT_TRUE(prod.push(1, &x, sizeof(x)));  // slot 15; slot 0 poisoned
  EXPECT_EQ(mem.slots[0].word, lci::net::shm::kPoison);
  ASSERT_TRUE(cons.peek(&m));
  EXPECT_EQ(m.payload, mem.slots[15].payload);
}

// A lent payload that holds, where the next lap's header words go, the
// very words that would announce messages there: never taken for a
// message when the consumer reaches those slots (the producer poisoned
// each before the consumer could get there).
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
  // and the real message at 17 is found
  int y = 6;
  ASSERT_TRUE(prod.push(2, &y, sizeof(y)));
  ASSERT_TRUE(cons.peek(&m));
  EXPECT_EQ(m.type, 2);
  int v;
  std::memcpy(&v, m.payload, sizeof(v));
  EXPECT_EQ(v, 6);
}

// Random sizes through a 64-slot ring, producer and consumer interleaved
// in one thread, every message's payload forged so that each of its
// continuation slots begins with the header word its position will need
// one and two laps later; messages taken in place (lent) and popped at
// random, publishes at random (so lent messages pile up across pads and
// wraps). Checked: every message arrives once, in order, intact, lent
// ones until the publish; the consumer never finds a message the producer
// did not push (the forged words never pass for one).
TEST(ShmRing, ForgedStampsWithLoansAcrossWraps)
{
  constexpr uint64_t n = 64;
  ring_mem_t mem(n);
  ring_producer_t prod(mem.slots.get(), n, mem.ctrl.get());
  ring_consumer_t cons(mem.slots.get(), n, mem.ctrl.get());
  const size_t max = prod.max_payload();
  std::mt19937_64 rng(7);
  // the payload of message seq pushed at position pos
  auto payload = [&](uint64_t seq, uint64_t pos, size_t len) {
    std::vector<unsigned char> p(len);
    for (size_t i = 0; i < len; ++i)
      p[i] = static_cast<unsigned char>(seq * 31 + i);
    for (uint64_t i = 1; i * kSlot <= len; ++i) {
      const uint64_t lap = (seq + i) % 2 + 1;
      const uint64_t w = lci::net::shm::header_word(pos + i + lap * n, 8, 1);
      std::memcpy(&p[i * kSlot - lci::net::shm::kRingHeader], &w, sizeof(w));
    }
    return p;
  };
  struct sent_t {
    std::vector<unsigned char> bytes;
    uint16_t type;
  };
  std::vector<sent_t> sent;  // by sequence number
  std::vector<std::pair<ring_consumer_t::msg_t, uint64_t>> lent;
  uint64_t pushed = 0, received = 0;
  const uint64_t count = 20000;
  auto check_lent = [&] {
    for (const auto& l : lent) {
      const sent_t& e = sent[l.second];
      ASSERT_EQ(l.first.length, e.bytes.size());
      if (!e.bytes.empty()) {
        ASSERT_EQ(std::memcmp(l.first.payload, e.bytes.data(), e.bytes.size()),
                  0)
            << "lent message " << l.second << " overwritten";
      }
    }
  };
  size_t next_len = 0;
  bool have_next = false;
  while (received < count) {
    const uint64_t r = rng();
    if (pushed < count && r % 3 != 0) {
      if (!have_next) {
        next_len = r % 4 == 0 ? (r >> 8) % (max + 1) : (r >> 8) % 200;
        have_next = true;
      }
      // the position the message will take: after a pad when it would
      // cross the end of the array
      uint64_t pos = prod.tail();
      const uint64_t k = lci::net::shm::slots_for(next_len);
      if ((pos & (n - 1)) + k > n) pos += n - (pos & (n - 1));
      sent_t e{payload(pushed, pos, next_len),
               static_cast<uint16_t>(1 + pushed % 14)};
      if (prod.push(e.type, e.bytes.data(), e.bytes.size())) {
        sent.push_back(std::move(e));
        ++pushed;
        have_next = false;
      }
    }
    if (r % 5 < 3) {
      ring_consumer_t::msg_t m;
      if (cons.peek(&m)) {
        ASSERT_LT(received, pushed) << "a message nobody pushed";
        const sent_t& e = sent[received];
        ASSERT_EQ(m.type, e.type) << "message " << received;
        ASSERT_EQ(m.length, e.bytes.size()) << "message " << received;
        if (m.length) {
          ASSERT_EQ(std::memcmp(m.payload, e.bytes.data(), m.length), 0)
              << "message " << received;
        }
        if ((r >> 20) % 2) {
          cons.take(m);
          lent.emplace_back(m, received);
        } else {
          cons.pop(m);
        }
        ++received;
      } else {
        ASSERT_EQ(received, pushed) << "a pushed message not found";
      }
    }
    if ((r >> 24) % 7 == 0) {
      check_lent();
      lent.clear();
      cons.publish();
    }
  }
  check_lent();
  cons.publish();
  ring_consumer_t::msg_t m;
  EXPECT_FALSE(cons.peek(&m));
  EXPECT_EQ(cons.head(), prod.tail());
}

// push writes its message's slots and the first word of the slot after it
// (kPoison) and nothing else, for every size up to the largest, and with a
// pad: the pad's header, the message at the start, the poison after it.
TEST(ShmRing, PushWritesItsSlotsAndPoisonsTheNext)
{
  constexpr uint64_t kMark = 0x5a5a5a5a5a5a5a5aull;
  constexpr uint64_t n = small_ring_t::n;
  const auto mark = [&](ring_mem_t& mem) {
    for (uint64_t i = 0; i < n; ++i) {
      mem.slots[i].word = kMark;
      std::memset(mem.slots[i].payload, 0x77, sizeof(mem.slots[i].payload));
    }
  };
  for (uint64_t k = 1; k <= n / 2; ++k) {
    small_ring_t ring;
    mark(ring.mem);
    std::vector<unsigned char> p(k * kSlot - lci::net::shm::kRingHeader, 0x11);
    ASSERT_TRUE(ring.prod.push(1, p.data(), p.size()));
    for (uint64_t i = 0; i < n; ++i) {
      const slot_t& s = ring.mem.slots[i];
      if (i == 0) {
        EXPECT_EQ(s.word, lci::net::shm::header_word(0, p.size(), 1));
      } else if (i == k) {
        EXPECT_EQ(s.word, lci::net::shm::kPoison) << "k " << k;
      } else if (i > k) {
        EXPECT_EQ(s.word, kMark) << "k " << k << ", slot " << i;
      }
      for (unsigned char c : s.payload)
        ASSERT_EQ(c, i < k ? 0x11 : 0x77) << "k " << k << ", slot " << i;
    }
  }
  // a pad: 13 one-slot messages consumed, then a 4-slot one at index 13
  small_ring_t ring;
  int x = 1;
  for (int i = 0; i < 13; ++i) {
    ASSERT_TRUE(ring.prod.push(1, &x, sizeof(x)));
    ring_consumer_t::msg_t m;
    ASSERT_TRUE(ring.cons.peek(&m));
    ring.cons.pop(m);
  }
  ring.cons.publish();
  mark(ring.mem);
  std::vector<unsigned char> p(4 * kSlot - lci::net::shm::kRingHeader, 0x22);
  ASSERT_TRUE(ring.prod.push(2, p.data(), p.size()));
  EXPECT_EQ(ring.mem.slots[13].word,
            lci::net::shm::header_word(13, 3 * kSlot, lci::net::shm::kPad));
  EXPECT_EQ(ring.mem.slots[14].word, kMark);
  EXPECT_EQ(ring.mem.slots[15].word, kMark);
  EXPECT_EQ(ring.mem.slots[0].word,
            lci::net::shm::header_word(16, p.size(), 2));
  EXPECT_EQ(ring.mem.slots[4].word, lci::net::shm::kPoison);
  for (uint64_t i = 5; i < 13; ++i) EXPECT_EQ(ring.mem.slots[i].word, kMark);
  ring_consumer_t::msg_t m;
  ASSERT_TRUE(ring.cons.peek(&m));
  EXPECT_EQ(m.type, 2);
  EXPECT_EQ(m.payload, ring.mem.slots[0].payload);
}

// push_one (the one-slot send of a 16-byte header and up to 8 bytes, when
// one_fits) leaves the ring as push does, for every length and around the
// end of the array; one_fits is false when all slots but one are taken (and
// stays false until push re-reads the published head).
TEST(ShmRing, PushOneIsPushOfOneSlot)
{
  unsigned char head[16], tail[8];
  for (int i = 0; i < 16; ++i) head[i] = static_cast<unsigned char>(0xa0 + i);
  for (int i = 0; i < 8; ++i) tail[i] = static_cast<unsigned char>(0x10 + i);
  small_ring_t a, b;
  constexpr uint64_t n = small_ring_t::n;
  for (uint64_t round = 0; round < 3 * n; ++round) {
    const size_t blen = round % 9;
    ASSERT_TRUE(a.prod.push(1, head, 16, tail, blen));
    if (b.prod.one_fits())
      b.prod.push_one(1, head, tail, blen);
    else
      ASSERT_TRUE(b.prod.push(1, head, 16, tail, blen));
    ASSERT_EQ(a.prod.tail(), b.prod.tail());
    for (uint64_t i = 0; i < n; ++i) {
      ASSERT_EQ(a.mem.slots[i].word, b.mem.slots[i].word) << round << " " << i;
      ASSERT_EQ(std::memcmp(a.mem.slots[i].payload, b.mem.slots[i].payload,
                            sizeof(a.mem.slots[i].payload)),
                0);
    }
    ring_consumer_t::msg_t m;
    ASSERT_TRUE(b.cons.peek(&m));
    ASSERT_EQ(m.length, 16 + blen);
    ASSERT_EQ(std::memcmp(m.payload, head, 16), 0);
    if (blen) {
      ASSERT_EQ(std::memcmp(m.payload + 16, tail, blen), 0);
    }
    b.cons.pop(m);
    ASSERT_TRUE(a.cons.peek(&m));
    a.cons.pop(m);
  }
  // full: with 15 slots unconsumed, no sixteenth
  small_ring_t c;
  for (uint64_t i = 0; i + 1 < n; ++i) {
    ASSERT_TRUE(c.prod.one_fits());
    c.prod.push_one(1, head, tail, 8);
  }
  EXPECT_FALSE(c.prod.one_fits());
  EXPECT_FALSE(c.prod.push(1, head, 16, tail, 8));
  ring_consumer_t::msg_t m;
  ASSERT_TRUE(c.cons.peek(&m));
  c.cons.pop(m);
  c.cons.publish();
  EXPECT_FALSE(c.prod.one_fits());  // the cached head
  EXPECT_TRUE(c.prod.push(1, head, 16, tail, 8));
  EXPECT_EQ(c.mem.slots[0].word, lci::net::shm::kPoison);
  while (c.cons.peek(&m)) c.cons.pop(m);
  c.cons.publish();
  ASSERT_TRUE(c.prod.push(1, head, 16, tail, 8));  // re-reads the head
  EXPECT_TRUE(c.prod.one_fits());
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
