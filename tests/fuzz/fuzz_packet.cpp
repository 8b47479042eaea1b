// Fuzz target: the receive path of the progress engine. Every input is one
// message as the network would deliver it into a pre-posted packet (the
// 16-byte header of src/core/protocol.hpp, then the payload or a control
// message's fields). It goes through
//   1. check_message, the pure check of the header and control payloads;
//   2. introspect::deliver_raw: the real deliver_message of a live runtime
//      (rank 0 of 1, shm), i.e. matching, rendezvous and RMA control
//      handling, with what the runtime knows (engines, rcomps, contexts);
// then progress runs, so replies the message caused (a rejecting FIN to
// "rank 0", i.e. this process) are received too. Malformed input must end
// in lci::fatal_error, never in a crash, a sanitizer report, another
// exception type, or a message that check_message refused being accepted.
// Built with libFuzzer (LCI_FUZZ=ON) or with corpus_driver.cpp (always).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <lci.hpp>

#include "core/introspect.hpp"
#include "core/protocol.hpp"

namespace
{

// The runtime the messages arrive at. Sends that match no receive stay in
// the matching engine as unexpected messages (in packets, or heap copies
// once the device's pool runs dry): when the pool is empty, or after
// kRenewEvery messages delivered, the runtime is replaced by a fresh one,
// so that the cost of an input does not grow with the run.
class harness_t
{
 public:
  static constexpr long kRenewEvery = 2000;
  long delivered = 0;        // since the runtime was allocated
  unsigned long inputs = 0;  // every input so far (odd ones go in place)

  lci::runtime_t rt;
  lci::comp_t counter;
  lci::matching_engine_t extra_engine;

  harness_t() { open(); }

  void open()
  {
    rt = lci::alloc_runtime_x()
             .bootstrap_backend("local")
             .npackets(512)
             .packet_size(4096)();
    lci::device_t dev = lci::get_default_device_x().runtime(rt)();
    (void)dev;
    // a second engine, so that engine index 2 exists (0: default, 1:
    // collectives); a remote completion (a counter: it copies nothing)
    // so that active messages to rcomp 0 are delivered
    extra_engine = lci::alloc_matching_engine_x().runtime(rt).num_buckets(64)();
    counter = lci::alloc_counter_x().runtime(rt)();
    lci::register_rcomp_x(counter).runtime(rt)();
  }

  void settle()
  {
    // progress until nothing more happens: replies sent to ourselves are
    // received and rejected here
    for (int quiet = 0, i = 0; quiet < 8 && i < 10000; ++i) {
      try {
        lci::error_t e = lci::progress_x().runtime(rt)();
        quiet = e.is_done() ? 0 : quiet + 1;
      } catch (const lci::fatal_error&) {
        quiet = 0;
      }
    }
  }

  void close()
  {
    settle();
    lci::free_matching_engine_x(&extra_engine).runtime(rt)();
    lci::free_comp(&counter);
    lci::free_runtime(&rt);
  }

  void renew()
  {
    delivered = 0;
    close();
    open();
  }
};

harness_t* g_harness = nullptr;

harness_t& harness()
{
  if (!g_harness) {
    g_harness = new harness_t;
    // at exit (the corpus driver's return, libFuzzer's end of run), free
    // the runtime: its endpoint's shared-memory region goes with it, where
    // a runtime left alive at exit leaves it in /dev/shm
    std::atexit([] {
      try {
        g_harness->close();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz_packet: at exit: %s\n", e.what());
      }
    });
  }
  return *g_harness;
}

// With LCI_FUZZ_STATS set, what happened to the inputs is printed at exit
// (to see that a corpus reaches past check_message).
struct stats_t {
  long delivered = 0;  // the receive path took it without an error
  long rejected = 0;   // the receive path threw fatal_error
  long refused = 0;    // ... because check_message said no
  long renewed = 0;    // runtimes replaced (pool full of unexpected sends)
  ~stats_t()
  {
    if (std::getenv("LCI_FUZZ_STATS"))
      std::fprintf(stderr,
                   "fuzz_packet: %ld delivered, %ld rejected with "
                   "fatal_error (%ld of them by check_message), %ld "
                   "runtimes\n",
                   delivered, rejected, refused, renewed + 1);
  }
} stats;

[[noreturn]] void fail(const char* what)
{
  std::fprintf(stderr, "fuzz_packet: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  harness_t& h = harness();
  lci::msg_header_t hdr;
  const char* bad = lci::check_message(data, size, 1, &hdr);
  if (!bad && size < sizeof(hdr)) fail("check_message accepted a short input");
  // A rendezvous active message to the registered counter would allocate
  // the announced size (up to kMaxRdvSize) and wait for data that never
  // comes: legal for a peer, not useful here.
  if (!bad && hdr.type() == lci::msg_type_t::rts_am && hdr.aux() == 0) return 0;
  bool threw = false;
  bool delivered = false;
  for (int attempt = 0; attempt < 2 && !delivered && !threw; ++attempt) {
    try {
      // every other input in place (a native shm backend's small message)
      delivered = lci::introspect::deliver_raw(data, size, h.rt,
                                               lci::device_t(), ++h.inputs & 1);
    } catch (const lci::fatal_error&) {
      threw = true;
    } catch (...) {
      fail("the receive path threw something other than lci::fatal_error");
    }
    if (!delivered && !threw) {
      if (size > 4096) return 0;  // larger than a packet: cannot arrive
      h.renew();                  // the pool is full of unexpected sends
      ++stats.renewed;
    }
  }
  if (bad && delivered && !threw)
    fail("the receive path accepted a message check_message refuses");
  if (bad) ++stats.refused;
  if (threw) ++stats.rejected;
  if (delivered && !threw) ++stats.delivered;
  if (delivered && ++h.delivered >= harness_t::kRenewEvery) {
    h.renew();
    ++stats.renewed;
  }
  h.settle();
  return 0;
}
