// The socket backend's device on its own (src/net/socket/): two devices of
// one process, ranks 0 and 1 of 2, over loopback TCP. Framing and order of
// messages handed over in scratch and into posted receives, a send larger
// than the socket takes (partial writes queued, partial reads streamed into
// the receive), emulated RMA and the target's key checks (refused ones
// touch nothing and leave the stream in step), and the ends of a
// connection: a peer that dies (every pending operation fails with its
// rank) and one that closes in order (no failure). Back-pressure: a
// stalled poll sleeps instead of retrying the socket (the sender while its
// peer does not read, the receiver while a payload is half there), and
// large and small messages cross intact while the reader lags.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net/socket/device.hpp"
#include "net/socket/keys.hpp"

namespace sk = lci::net::socket;
using lci::net::cqe_t;
using lci::net::remote_t;

namespace
{

sk::config_t config(int rank)
{
  sk::config_t c;
  c.rank_me = rank;
  c.rank_n = 2;
  c.ip = "127.0.0.1";
  c.max_copy = 8192;
  c.connect_timeout_s = 10;
  c.keys = std::make_shared<sk::key_table_t>();
  return c;
}

// the sleep of a stalled poll that these tests give the devices (the
// default is none)
constexpr size_t kSleepUs = 200;

struct pair_t {
  sk::config_t c0 = config(0), c1 = config(1);
  std::unique_ptr<sk::socket_device_t> d0, d1;
  explicit pair_t(size_t wait_us = kSleepUs, size_t recv_chunk = sk::kRecvChunk)
  {
    c0.wait_us = c1.wait_us = wait_us;
    c0.recv_chunk = c1.recv_chunk = recv_chunk;
    d0 = std::make_unique<sk::socket_device_t>(c0);
    d1 = std::make_unique<sk::socket_device_t>(c1);
    std::vector<std::string> addrs = {d0->get_address(), d1->get_address()};
    d0->connect(addrs);  // lands in rank 1's backlog
    d1->connect(addrs);  // accepts it
  }
};

unsigned char pattern(size_t msg, size_t i)
{
  return static_cast<unsigned char>(msg * 131 + i * 7 + 3);
}

// Polls both devices until `done` says so (or 10 s pass); every cqe goes
// to `on` with the device that returned it.
bool poll_until(pair_t& p, const std::function<bool()>& done,
                const std::function<void(int, const cqe_t&)>& on,
                bool scratch = true)
{
  alignas(16) char buf[4096];
  cqe_t cq[16];
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    for (int d = 0; d < 2; ++d) {
      auto& dev = d ? p.d1 : p.d0;
      size_t n =
          dev->poll_comp(cq, 16, scratch ? buf : nullptr, scratch ? 4096 : 0);
      for (size_t i = 0; i < n; ++i) on(d, cq[i]);
    }
  }
  return true;
}

// whether `len` bytes at `data` are message `msg`'s pattern
bool patterned_as(size_t msg, const void* data, size_t len)
{
  const auto* d = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < len; ++i)
    if (d[i] != pattern(msg, i)) return false;
  return true;
}

// `len` bytes of message `msg`'s pattern
std::vector<char> patterned(size_t msg, size_t len)
{
  std::vector<char> v(len);
  for (size_t i = 0; i < len; ++i) v[i] = static_cast<char>(pattern(msg, i));
  return v;
}

// This thread's voluntary context switches so far: a poll that sleeps in
// the kernel adds one, one that retries the socket none.
long voluntary_switches()
{
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nvcsw;
}

// Polls `dev` alone for `ms` milliseconds (its peer is not polled); the
// voluntary switches it took. No cqe may come.
long poll_alone(sk::socket_device_t& dev, int ms)
{
  alignas(16) char scratch[4096];
  cqe_t cq[16];
  const long before = voluntary_switches();
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end)
    EXPECT_EQ(dev.poll_comp(cq, 16, scratch, sizeof(scratch)), 0u);
  return voluntary_switches() - before;
}

// Polls both devices until rank 0's one large send and rank 1's receive of
// it complete, then checks every byte.
void complete_big(pair_t& p, const std::vector<char>& out,
                  const std::vector<char>& in)
{
  bool done = false, recvd = false;
  ASSERT_TRUE(poll_until(
      p, [&] { return done && recvd; },
      [&](int d, const cqe_t& c) {
        ASSERT_EQ(c.error, nullptr);
        if (d == 0) {
          done = true;
          return;
        }
        ASSERT_EQ(c.kind, cqe_t::kind_t::recv);
        ASSERT_EQ(c.length, out.size());
        recvd = true;
      }));
  ASSERT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);
}

void expect_msg(size_t k, const char* data, size_t len)
{
  ASSERT_EQ(len, 1 + k % 300) << "message " << k;
  for (size_t i = 0; i < len; ++i)
    ASSERT_EQ(static_cast<unsigned char>(data[i]), pattern(k, i))
        << "message " << k << " byte " << i;
}

void send_many(pair_t& p, size_t count, std::vector<std::vector<char>>* keep)
{
  keep->resize(count);
  for (size_t k = 0; k < count; ++k) {
    const size_t len = 1 + k % 300;
    std::vector<char>& m = (*keep)[k];
    m.resize(len);
    for (size_t i = 0; i < len; ++i) m[i] = static_cast<char>(pattern(k, i));
    lci::error_t e;
    if (k % 2) {
      // header and payload in two pieces, copied
      const size_t h = len / 3;
      e = p.d0->send_copy(1, m.data(), h, m.data() + h, len - h);
      ASSERT_TRUE(e.is_done());
    } else {
      e = p.d0->post_send(1, m.data(), len, &m);
      ASSERT_TRUE(e.is_done() || e.is_posted());
    }
  }
}

}  // namespace

TEST(SocketDevice, MessagesInScratchInOrder)
{
  pair_t p;
  std::vector<std::vector<char>> keep;
  const size_t count = 3000;
  send_many(p, count, &keep);
  size_t got = 0;
  ASSERT_TRUE(poll_until(
      p, [&] { return got == count; },
      [&](int d, const cqe_t& c) {
        ASSERT_EQ(c.error, nullptr);
        if (d == 0) {
          ASSERT_EQ(c.kind, cqe_t::kind_t::send);
          return;
        }
        ASSERT_EQ(c.kind, cqe_t::kind_t::message);
        ASSERT_EQ(reinterpret_cast<uintptr_t>(c.ctx) % 16, 0u);
        expect_msg(got++, static_cast<const char*>(c.ctx), c.length);
      }));
}

TEST(SocketDevice, MessagesIntoPostedReceivesInOrder)
{
  pair_t p;
  std::vector<std::vector<char>> keep, bufs(64, std::vector<char>(8192));
  const size_t count = 1000;
  send_many(p, count, &keep);
  for (auto& b : bufs)
    ASSERT_TRUE(p.d1->post_recv(b.data(), 8192, &b).is_posted());
  size_t got = 0;
  ASSERT_TRUE(poll_until(
      p, [&] { return got == count; },
      [&](int d, const cqe_t& c) {
        ASSERT_EQ(c.error, nullptr);
        if (d == 0) return;
        ASSERT_EQ(c.kind, cqe_t::kind_t::recv);
        auto* b = static_cast<std::vector<char>*>(c.ctx);
        expect_msg(got++, b->data(), c.length);
        ASSERT_TRUE(p.d1->post_recv(b->data(), 8192, b).is_posted());
      },
      false));
}

// 16 MiB: more than both socket buffers hold, so the send is queued
// (posted) and completes later; the small messages after it wait behind
// it and arrive after it, in order.
TEST(SocketDevice, LargeSendPartialWritesAndReads)
{
  pair_t p;
  const size_t big = size_t(16) << 20;
  std::vector<char> out = patterned(9, big), in(big);
  int sent = 0;
  lci::error_t e = p.d0->post_send(1, out.data(), big, &sent);
  ASSERT_TRUE(e.is_posted());
  std::vector<std::vector<char>> keep;
  send_many(p, 100, &keep);
  ASSERT_TRUE(p.d1->post_recv(in.data(), big, &in).is_posted());
  bool big_done = false, big_recv = false;
  size_t got = 0;
  ASSERT_TRUE(poll_until(
      p, [&] { return big_done && big_recv && got == 100; },
      [&](int d, const cqe_t& c) {
        ASSERT_EQ(c.error, nullptr);
        if (d == 0) {
          if (c.ctx == &sent) big_done = true;
          return;
        }
        if (c.kind == cqe_t::kind_t::recv) {
          ASSERT_EQ(c.ctx, &in);
          ASSERT_EQ(c.length, big);
          ASSERT_EQ(got, 0u) << "a later message overtook the large one";
          big_recv = true;
          return;
        }
        expect_msg(got++, static_cast<const char*>(c.ctx), c.length);
      }));
  ASSERT_EQ(std::memcmp(in.data(), out.data(), big), 0);
}

// A payload is read in recv_chunk pieces: a 16 MiB message with 64 KiB
// chunks takes at least 256 recvs and arrives intact, and so does the small
// message behind it; with no limit it takes fewer.
TEST(SocketDevice, PayloadReadInChunks)
{
  const size_t big = size_t(16) << 20, chunk = 64 * 1024;
  uint64_t recvs[2] = {0, 0};
  for (size_t limit : {chunk, size_t(0)}) {
    pair_t p(kSleepUs, limit);
    std::vector<char> out = patterned(11, big), in(big);
    int sent = 0;
    ASSERT_TRUE(p.d0->post_send(1, out.data(), big, &sent).is_posted());
    std::vector<std::vector<char>> keep;
    send_many(p, 1, &keep);
    ASSERT_TRUE(p.d1->post_recv(in.data(), big, &in).is_posted());
    const uint64_t before = p.d1->data_recvs();
    bool big_done = false, big_recv = false, small = false;
    ASSERT_TRUE(poll_until(
        p, [&] { return big_done && big_recv && small; },
        [&](int d, const cqe_t& c) {
          ASSERT_EQ(c.error, nullptr);
          if (d == 0) {
            big_done = big_done || c.ctx == &sent;
            return;
          }
          if (c.kind == cqe_t::kind_t::recv) {
            ASSERT_EQ(c.length, big);
            big_recv = true;
            return;
          }
          ASSERT_TRUE(big_recv) << "the small message overtook the large one";
          expect_msg(0, static_cast<const char*>(c.ctx), c.length);
          small = true;
        }));
    ASSERT_EQ(std::memcmp(in.data(), out.data(), big), 0);
    recvs[limit == 0] = p.d1->data_recvs() - before;
  }
  EXPECT_GE(recvs[0], big / chunk);
  EXPECT_LT(recvs[1], recvs[0]);
}

TEST(SocketDevice, RmaAndRefusedKeys)
{
  pair_t p;
  // the target region with canaries around it
  const size_t size = 1 << 20, pad = 4096;
  std::vector<char> mem(size + 2 * pad, 'c');
  char* region = mem.data() + pad;
  const uint64_t key = 0x1234567890ull;
  p.c1.keys->add(key, region, size);
  const uint64_t base = reinterpret_cast<uintptr_t>(region);
  std::vector<char> src(size), dst(size);
  for (size_t i = 0; i < size; ++i) src[i] = static_cast<char>(pattern(5, i));

  struct outcome_t {
    int n = 0;
    const char* error = nullptr;
    bool refused = false;
    int rank = -1;
  };
  auto run = [&](std::function<lci::error_t(void*)> post, int want_remote) {
    outcome_t o;
    int remote = 0;
    lci::error_t e = post(&o);
    EXPECT_TRUE(e.is_posted() || e.is_done());
    EXPECT_TRUE(poll_until(
        p, [&] { return o.n == 1 && remote == want_remote; },
        [&](int d, const cqe_t& c) {
          if (d == 1) {
            ASSERT_EQ(c.kind, cqe_t::kind_t::remote_write);
            ASSERT_EQ(c.imm, 0xabcdu);
            ++remote;
            return;
          }
          ASSERT_EQ(c.ctx, &o);
          ++o.n;
          o.error = c.error;
          o.refused = c.refused;
          o.rank = c.rank;
        }));
    return o;
  };
  // valid: a write at an offset, a writeimm, a read back
  outcome_t o = run(
      [&](void* ctx) {
        return p.d0->post_write(1, src.data(), 1000, nullptr,
                                remote_t{base, 24, key}, ctx, true);
      },
      0);
  ASSERT_EQ(o.error, nullptr);
  ASSERT_EQ(std::memcmp(region + 24, src.data(), 1000), 0);
  o = run(
      [&](void* ctx) {
        return p.d0->post_writeimm(1, src.data(), size, nullptr,
                                   remote_t{base, 0, key}, 0xabcd, ctx);
      },
      1);
  ASSERT_EQ(o.error, nullptr);
  ASSERT_EQ(std::memcmp(region, src.data(), size), 0);
  o = run(
      [&](void* ctx) {
        return p.d0->post_read(1, dst.data(), size, nullptr,
                               remote_t{base, 0, key}, ctx);
      },
      0);
  ASSERT_EQ(o.error, nullptr);
  ASSERT_EQ(std::memcmp(dst.data(), src.data(), size), 0);

  // refused: a wrong key, past the end, before the start; large payloads
  // too, which the target must skip to stay in step
  std::vector<char> before(mem);
  struct bad_t {
    remote_t r;
    size_t len;
  } bad[] = {{{base, 0, key + 1}, 8},
             {{base, size - 4, key}, 8},
             {{base - 8, 0, key}, 8},
             {{base, 0, key + 1}, size},
             {{base, 1, key}, size}};
  for (const bad_t& b : bad) {
    for (int op = 0; op < 2; ++op) {
      o = run(
          [&](void* ctx) {
            return op ? p.d0->post_read(1, dst.data(), b.len, nullptr, b.r, ctx)
                      : p.d0->post_write(1, src.data(), b.len, nullptr, b.r,
                                         ctx, false);
          },
          0);
      ASSERT_NE(o.error, nullptr);
      ASSERT_TRUE(o.refused);
      ASSERT_EQ(o.rank, 1);
    }
  }
  ASSERT_EQ(std::memcmp(before.data(), mem.data(), mem.size()), 0)
      << "a refused write touched the target";
  // the stream is still in step: messages pass
  std::vector<std::vector<char>> keep;
  send_many(p, 10, &keep);
  size_t got = 0;
  ASSERT_TRUE(poll_until(
      p, [&] { return got == 10; },
      [&](int d, const cqe_t& c) {
        if (d == 1)
          expect_msg(got++, static_cast<const char*>(c.ctx), c.length);
      }));
}

// Rank 1 lives in a child process that connects, then dies without a word:
// rank 0's pending read and network send fail with rank 1, and the device
// reports the failure itself; later posts fail the same way, and none
// hangs.
TEST(SocketDevice, PeerDeathFailsPendingOperations)
{
  sk::config_t c0 = config(0), c1 = config(1);
  auto d0 = std::make_unique<sk::socket_device_t>(c0);
  auto d1 = std::make_unique<sk::socket_device_t>(c1);
  std::vector<std::string> addrs = {d0->get_address(), d1->get_address()};
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    d1->connect(addrs);
    ::usleep(300 * 1000);
    ::_exit(0);  // no destructor: no bye
  }
  d1.reset();  // the parent's copy of the listener
  d0->connect(addrs);
  std::vector<char> buf(64);
  int read_ctx = 0, send_ctx = 0, late_ctx = 0;
  ASSERT_TRUE(
      d0->post_read(1, buf.data(), 64, nullptr, remote_t{4096, 0, 1}, &read_ctx)
          .is_posted());
  ASSERT_TRUE(d0->post_send_network(1, buf.data(), 64, &send_ctx).is_posted());
  bool read_failed = false, send_failed = false, peer_failed = false;
  cqe_t cq[16];
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(read_failed && send_failed && peer_failed) &&
         std::chrono::steady_clock::now() < end) {
    size_t n = d0->poll_comp(cq, 16, nullptr, 0);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_NE(cq[i].error, nullptr);
      ASSERT_EQ(cq[i].rank, 1);
      ASSERT_FALSE(cq[i].refused);
      if (cq[i].ctx == &read_ctx) read_failed = true;
      if (cq[i].ctx == &send_ctx) send_failed = true;
      if (!cq[i].ctx) peer_failed = true;
    }
  }
  EXPECT_TRUE(read_failed && send_failed && peer_failed);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(d0->post_send(1, buf.data(), 64, &late_ctx).is_posted());
  ASSERT_EQ(d0->poll_comp(cq, 16, nullptr, 0), 1u);
  ASSERT_EQ(cq[0].ctx, &late_ctx);
  ASSERT_EQ(cq[0].rank, 1);
}

// A device freed in order says bye: its peer sees the connection end and
// reports nothing.
TEST(SocketDevice, OrderlyCloseIsNoFailure)
{
  pair_t p;
  p.d1.reset();
  alignas(16) char scratch[4096];
  cqe_t cq[16];
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < end)
    ASSERT_EQ(p.d0->poll_comp(cq, 16, scratch, sizeof(scratch)), 0u);
}

// The sender of a 16 MiB message whose peer does not read: its polls find
// the socket full and sleep until it has room (a switch per sleep; 300 ms
// hold about 1,500 sleeps of 200 us) instead of retrying it (no switch at
// all with wait_us 0); once the peer reads, every byte arrives.
TEST(SocketDevice, StalledSenderSleepsAndLosesNothing)
{
  const size_t big = size_t(16) << 20;
  const std::vector<char> out = patterned(5, big);
  long switches[2] = {0, 0};
  for (size_t wait_us : {size_t(0), kSleepUs}) {
    pair_t p(wait_us);
    std::vector<char> in(big);
    int sent = 0;
    ASSERT_TRUE(p.d0->post_send(1, out.data(), big, &sent).is_posted());
    switches[wait_us != 0] = poll_alone(*p.d0, 300);
    ASSERT_TRUE(p.d1->post_recv(in.data(), big, &in).is_posted());
    complete_big(p, out, in);
  }
  EXPECT_GE(switches[1], 50) << "the stalled sender did not sleep";
  EXPECT_LT(switches[0], switches[1] / 4)
      << "wait_us 0 slept: " << switches[0] << " against " << switches[1];
}

// The receiver of a payload that stops arriving halfway (its sender is not
// polled): its polls sleep until more comes; then the rest arrives intact.
TEST(SocketDevice, ReceiverWithHalfAPayloadSleeps)
{
  pair_t p;
  const size_t big = size_t(16) << 20;
  std::vector<char> out = patterned(6, big), in(big);
  int sent = 0;
  ASSERT_TRUE(p.d0->post_send(1, out.data(), big, &sent).is_posted());
  ASSERT_TRUE(p.d1->post_recv(in.data(), big, &in).is_posted());
  EXPECT_GE(poll_alone(*p.d1, 300), 50) << "the stalled receiver did not sleep";
  complete_big(p, out, in);
}

// Back-pressure with a thread per device: the sender posts large messages
// (4 MiB, more than the socket holds) between small ones and polls without
// pause; the reader polls in bursts with 2 ms pauses. Every message
// arrives whole and in order, and every send completes.
TEST(SocketDevice, LaggingReaderLosesNothing)
{
  pair_t p;
  const size_t big = size_t(4) << 20, nbig = 6;
  std::vector<std::vector<char>> outs;
  std::vector<std::vector<char>> ins(nbig, std::vector<char>(big));
  for (size_t k = 0; k < nbig; ++k) outs.push_back(patterned(k + 20, big));
  for (auto& b : ins)
    ASSERT_TRUE(p.d1->post_recv(b.data(), big, &b).is_posted());
  std::vector<std::vector<char>> keep;
  size_t sends_done = 0, small_got = 0, big_got = 0;
  std::thread sender([&] {
    alignas(16) char scratch[4096];
    cqe_t cq[16];
    size_t small_sent = 0;
    keep.resize(nbig * 10);
    const auto end =
        std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (size_t k = 0; k < nbig && std::chrono::steady_clock::now() < end;) {
      lci::error_t e = p.d0->post_send(1, outs[k].data(), big, &outs[k]);
      if (e.is_done()) ++sends_done;
      for (size_t j = 0; j < 10; ++j, ++small_sent) {
        std::vector<char>& m = keep[small_sent];
        m.resize(1 + small_sent % 300);
        for (size_t i = 0; i < m.size(); ++i)
          m[i] = static_cast<char>(pattern(small_sent, i));
        while (p.d0->send_copy(1, m.data(), m.size(), nullptr, 0).is_retry()) {
        }
      }
      ++k;
      // a few polls between posts: the queue grows past the socket's room
      for (int i = 0; i < 100; ++i) {
        const size_t n = p.d0->poll_comp(cq, 16, scratch, sizeof(scratch));
        for (size_t c = 0; c < n; ++c) {
          EXPECT_EQ(cq[c].error, nullptr);
          ++sends_done;
        }
      }
    }
    while (sends_done < nbig && std::chrono::steady_clock::now() < end) {
      const size_t n = p.d0->poll_comp(cq, 16, scratch, sizeof(scratch));
      for (size_t c = 0; c < n; ++c) {
        EXPECT_EQ(cq[c].error, nullptr);
        ++sends_done;
      }
    }
  });
  // checked on the main thread after the join (an ASSERT here would leave
  // the sender running)
  std::string bad;
  alignas(16) char scratch[4096];
  cqe_t cq[16];
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (bad.empty() && (big_got < nbig || small_got < nbig * 10) &&
         std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 50 && bad.empty(); ++i) {
      const size_t n = p.d1->poll_comp(cq, 16, scratch, sizeof(scratch));
      for (size_t c = 0; c < n && bad.empty(); ++c) {
        const cqe_t& q = cq[c];
        if (q.error) {
          bad = q.error;
        } else if (q.kind == cqe_t::kind_t::recv) {
          // the large one k comes after the 10 small ones of k - 1
          if (big_got >= nbig || q.ctx != &ins[big_got] || q.length != big ||
              small_got != big_got * 10)
            bad = "large message " + std::to_string(big_got) + " out of place";
          ++big_got;
        } else if (q.kind != cqe_t::kind_t::message ||
                   small_got >= big_got * 10 ||
                   q.length != 1 + small_got % 300) {
          bad = "small message " + std::to_string(small_got) + " out of place";
        } else {
          if (!patterned_as(small_got, q.ctx, q.length))
            bad = "small message " + std::to_string(small_got) + " corrupt";
          ++small_got;
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  sender.join();
  ASSERT_EQ(bad, "");
  ASSERT_EQ(big_got, nbig);
  ASSERT_EQ(small_got, nbig * 10);
  EXPECT_EQ(sends_done, nbig);
  for (size_t k = 0; k < nbig; ++k)
    ASSERT_EQ(std::memcmp(ins[k].data(), outs[k].data(), big), 0)
        << "message " << k;
}

// Large payloads one after the other, a small message between each two:
// every byte arrives in order, and after the first large payload only the
// few bytes that share a short read with a frame's start pass through the
// input buffer (the rest is read straight into the posted receive).
TEST(SocketDevice, LargePayloadsSkipTheInputBuffer)
{
  pair_t p;
  const size_t big = size_t(1) << 20, nbig = 6;
  std::vector<std::vector<char>> outs, ins(nbig, std::vector<char>(big));
  for (size_t k = 0; k < nbig; ++k) outs.push_back(patterned(k + 40, big));
  for (auto& b : ins)
    ASSERT_TRUE(p.d1->post_recv(b.data(), big, &b).is_posted());
  std::vector<std::vector<char>> small(nbig);
  for (size_t k = 0; k < nbig; ++k) {
    lci::error_t e = p.d0->post_send(1, outs[k].data(), big, &outs[k]);
    ASSERT_TRUE(e.is_done() || e.is_posted());
    small[k] = patterned(k, 1 + k % 300);
    ASSERT_TRUE(p.d0->send_copy(1, small[k].data(), small[k].size(), nullptr, 0)
                    .is_done());
  }
  size_t big_got = 0, small_got = 0;
  ASSERT_TRUE(poll_until(
      p, [&] { return big_got == nbig && small_got == nbig; },
      [&](int d, const cqe_t& c) {
        ASSERT_EQ(c.error, nullptr);
        if (d == 0) return;
        if (c.kind == cqe_t::kind_t::recv) {
          ASSERT_EQ(c.ctx, &ins[big_got]);
          ASSERT_EQ(c.length, big);
          ASSERT_EQ(small_got, big_got);
          ++big_got;
          return;
        }
        ASSERT_EQ(small_got + 1, big_got);
        expect_msg(small_got++, static_cast<const char*>(c.ctx), c.length);
      }));
  for (size_t k = 0; k < nbig; ++k)
    ASSERT_EQ(std::memcmp(ins[k].data(), outs[k].data(), big), 0)
        << "message " << k;
  EXPECT_LE(p.d1->staged_bytes(), sk::kInBuf + nbig * sk::kPeekBytes);
}

namespace
{

void put_frame(std::vector<char>* s, sk::frame_t type, const void* pre,
               size_t plen, const char* data, size_t len)
{
  sk::hdr_t h{
      static_cast<uint32_t>(plen + len), static_cast<uint8_t>(type), {}};
  const char* hp = reinterpret_cast<const char*>(&h);
  s->insert(s->end(), hp, hp + sizeof(h));
  const char* pp = static_cast<const char*>(pre);
  if (plen) s->insert(s->end(), pp, pp + plen);
  s->insert(s->end(), data, data + len);
}

}  // namespace

// Rank 0 is a plain TCP socket of the test that writes a stream of frames
// in pieces cut anywhere (inside headers, RMA extensions and payloads),
// each piece read by rank 1's device before the next is written: small
// messages, a message larger than the input buffer and a writeimm larger
// than kDirectMin arrive whole and in order.
TEST(SocketDevice, FramesCutAnywhereArriveWhole)
{
  sk::config_t c1 = config(1);
  c1.wait_us = kSleepUs;
  sk::socket_device_t d1(c1);
  const std::string addr = d1.get_address();
  const size_t colon = addr.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(addr.substr(colon + 1))));
  ASSERT_EQ(inet_pton(AF_INET, addr.substr(0, colon).c_str(), &a.sin_addr), 1);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  struct closer_t {
    int fd;
    ~closer_t() { ::close(fd); }
  } closer{fd};
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const sk::hello_t hello{sk::kHelloMagic, 0};
  ASSERT_EQ(::write(fd, &hello, sizeof(hello)), ssize_t(sizeof(hello)));
  d1.connect({"127.0.0.1:1", addr});

  const size_t big = sk::kInBuf + 1000, rma = 300 * 1024;
  std::vector<char> big_out = patterned(70, big), big_in(big);
  std::vector<char> rma_out = patterned(71, rma), region(rma, 'c');
  const uint64_t key = 0x5151;
  c1.keys->add(key, region.data(), rma);
  ASSERT_TRUE(d1.post_recv(big_in.data(), big, &big_in).is_posted());
  // message k: 1 + k % 300 bytes; the large one after message 3, the
  // writeimm after message 9 (both then start while reads are short)
  std::vector<char> stream;
  const size_t nsmall = 40;
  for (size_t k = 0; k < nsmall; ++k) {
    std::vector<char> m = patterned(k, 1 + k % 300);
    put_frame(&stream, sk::frame_t::msg, nullptr, 0, m.data(), m.size());
    if (k == 3)
      put_frame(&stream, sk::frame_t::msg, nullptr, 0, big_out.data(), big);
    if (k == 9) {
      sk::rma_t x{key, reinterpret_cast<uintptr_t>(region.data()), 0x77, 5};
      put_frame(&stream, sk::frame_t::writeimm, &x, sizeof(x), rma_out.data(),
                rma);
    }
  }
  const size_t cuts[] = {1, 2, 3, 5, 7, 8, 9, 13, 31, 40, 41, 300, 4096, 70000};
  size_t small_got = 0, at = 0, cut = 0;
  bool big_got = false, rma_got = false;
  std::string bad;
  alignas(16) char scratch[4096];
  cqe_t cq[16];
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (bad.empty() && (small_got < nsmall || !big_got || !rma_got) &&
         std::chrono::steady_clock::now() < end) {
    const uint64_t before = d1.data_recvs();
    if (at < stream.size()) {
      const size_t n = std::min(cuts[cut++ % 14], stream.size() - at);
      ASSERT_EQ(::write(fd, stream.data() + at, n), ssize_t(n));
      at += n;
    }
    // poll until the piece has been read (or what is left parsed)
    do {
      const size_t n = d1.poll_comp(cq, 16, scratch, sizeof(scratch));
      for (size_t i = 0; i < n && bad.empty(); ++i) {
        const cqe_t& c = cq[i];
        if (c.error) {
          bad = c.error;
        } else if (c.kind == cqe_t::kind_t::recv) {
          if (big_got || small_got != 4 || c.length != big)
            bad = "the large message out of place";
          big_got = true;
        } else if (c.kind == cqe_t::kind_t::remote_write) {
          if (rma_got || small_got != 10 || c.imm != 0x77)
            bad = "the writeimm out of place";
          rma_got = true;
        } else if (c.kind != cqe_t::kind_t::message ||
                   c.length != 1 + small_got % 300 ||
                   (small_got == 4 && !big_got) ||
                   (small_got == 10 && !rma_got)) {
          bad = "message " + std::to_string(small_got) + " out of place";
        } else {
          if (!patterned_as(small_got, c.ctx, c.length))
            bad = "message " + std::to_string(small_got) + " corrupt";
          ++small_got;
        }
      }
    } while (bad.empty() && at < stream.size() && d1.data_recvs() == before &&
             std::chrono::steady_clock::now() < end);
  }
  ASSERT_EQ(bad, "");
  ASSERT_EQ(at, stream.size());
  ASSERT_EQ(small_got, nsmall);
  ASSERT_TRUE(big_got);
  ASSERT_TRUE(rma_got);
  EXPECT_EQ(std::memcmp(big_in.data(), big_out.data(), big), 0);
  EXPECT_EQ(std::memcmp(region.data(), rma_out.data(), rma), 0);
}
