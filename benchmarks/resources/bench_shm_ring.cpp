// The native shared-memory backend's ring alone (src/net/shm/ring.hpp): a
// producer thread streams 8-byte messages with the core's 16-byte header
// (gathered, as post_inject does) to a consumer thread on the other core,
// which reads each payload and publishes its head every 16 messages and
// whenever the ring is empty. No doorbell, no library above it: the
// transport's ceiling, against which the library's message rate can be
// read. Both stamp protocols of doorbell.hpp, side by side: "release"
// (plain stores, the default where the membarrier is available) and
// "seq_cst" (a locked store per message). One CSV row per protocol; Mops
// counts messages.
//
// Usage: bench_shm_ring [--ops N messages per run] [--runs R] [--no-pin]
#include <cstring>
#include <memory>

#include "harness.hpp"
#include "net/shm/ring.hpp"

namespace
{

using namespace lci::net::shm;

constexpr uint64_t kSlots =
    (256 << 10) / lci::net::shm::kSlot;  // 256 KiB, the default ring size
volatile uint64_t g_sink = 0;

void consume(ring_consumer_t* c, long ops)
{
  uint64_t sum = 0;
  for (long i = 0; i < ops; ++i) {
    ring_consumer_t::msg_t m;
    while (!c->peek(&m)) c->publish();
    uint64_t v;
    std::memcpy(&v, m.payload + 16, sizeof(v));
    sum += v;
    c->pop(m);
    if ((i & 15) == 15) c->publish();
  }
  c->publish();
  g_sink = sum;  // keep the reads
}

void produce(ring_producer_t* p, long ops)
{
  const unsigned char header[16] = {};
  for (long i = 0; i < ops; ++i) {
    uint64_t v = static_cast<uint64_t>(i);
    while (!p->push(1, header, sizeof(header), &v, sizeof(v))) {
    }
  }
}

}  // namespace

int main(int argc, char** argv)
{
  bench::options_t o =
      bench::parse(argc, argv,
                   "bench_shm_ring: 8-byte messages streamed through the "
                   "native shm ring between two threads, per stamp protocol "
                   "(--threads is ignored: one producer, one consumer)");
  bench::print_header();
  for (publish_t mode : {publish_t::release, publish_t::seq_cst}) {
    std::unique_ptr<slot_t[]> slots(new slot_t[kSlots]());
    std::unique_ptr<ring_ctrl_t> ctrl(new ring_ctrl_t());
    ring_producer_t prod(slots.get(), kSlots, ctrl.get(), mode);
    ring_consumer_t cons(slots.get(), kSlots, ctrl.get());
    std::vector<double> mops = bench::measure(o, 2, [&](int t, long ops) {
      if (t == 0)
        consume(&cons, ops);
      else
        produce(&prod, ops);
    });
    for (double& m : mops) m /= 2;  // measure counts both threads' ops
    bench::report("shm_ring_stream",
                  mode == publish_t::release ? "release" : "seq_cst", 2, o.ops,
                  mops);
  }
  return 0;
}
