// The RPC backend of the LCI paper's Listing 2 (iRPCLib), and a program
// that drives it from several threads and checks itself. This file is the
// code of docs/TUTORIAL.md, block by block (the test docs.tutorial keeps
// the two equal): change both together.
//
//   lcrun -n 2 ./irpc --threads 2 --msgs 50000
//
// Each message carries (source rank, source thread, sequence number) and a
// payload derived from them; the receiver checks every byte and that each
// (source, thread, sequence) arrives exactly once. Exit status 0 means all
// messages arrived intact.
#include <getopt.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <lci.hpp>
#include <thread>
#include <vector>

namespace
{

// ---- the iRPCLib backend (Listing 2) ----------------------------------

lci::comp_t shandler;  // send completion handler (shared)
lci::comp_t rcq;       // receive completion queue (shared)
lci::rcomp_t rcomp;    // remote completion handle of rcq
thread_local lci::device_t device;

void send_cb(lci::status_t status)
{
  // free the message buffer once the send is done
  std::free(status.buffer);
}

void global_init(int* rank_me, int* rank_n)
{
  lci::g_runtime_init();
  *rank_me = lci::get_rank_me();
  *rank_n = lci::get_rank_n();
  shandler = lci::alloc_handler(send_cb);
  rcq = lci::alloc_cq();
  rcomp = lci::register_rcomp(rcq);
}

void global_fina()
{
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&shandler);
  lci::free_comp(&rcq);
  lci::g_runtime_fina();
}

// Device allocation is collective (the k-th device of every rank pairs with
// the k-th device of the others), so the main thread allocates one per
// thread, in the same order on every rank, and hands them out.
lci::device_t thread_init() { return lci::alloc_device(); }

void thread_fina(lci::device_t* dev) { lci::free_device(dev); }

bool send_msg(int rank, void* buf, size_t size, lci::tag_t tag)
{
  lci::status_t status = lci::post_am_x(rank, buf, size, shandler, rcomp)
                             .tag(tag)
                             .device(device)();
  if (status.error.is_retry()) return false;  // failed temporarily
  if (status.error.is_done())
    send_cb(status);  // completed immediately: the handler is not called
  return true;
}

struct msg_t {
  int rank;
  lci::tag_t tag;
  void* buf;
  size_t size;
};

bool poll_msg(msg_t* msg)
{
  lci::status_t status = lci::cq_pop(rcq);
  if (!status.error.is_done()) return false;
  *msg = msg_t{status.rank, status.tag, status.buffer, status.size};
  return true;  // the caller frees msg->buf
}

bool do_background_work()
{
  return lci::progress_x().device(device)().is_done();
}

// ---- the application on top: produce, consume, check ------------------

constexpr lci::tag_t kRpcTag = 7;

struct header_t {
  int32_t rank;
  int32_t thread;
  uint64_t seq;
};

size_t message_size(uint64_t seq) { return sizeof(header_t) + seq % 200; }

unsigned char pattern(const header_t& h, size_t i)
{
  return static_cast<unsigned char>(h.rank * 131 + h.thread * 31 + h.seq * 7 +
                                    i);
}

struct config_t {
  int nthreads = 2;
  uint64_t nmsgs = 50000;  // per thread
};

struct state_t {
  int rank_me = 0, rank_n = 1;
  config_t cfg;
  // seen[src_thread][seq] for messages from the previous rank
  std::vector<std::vector<std::atomic<uint8_t>>> seen;
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> errors{0};
};

void check_message(state_t& st, const msg_t& m)
{
  header_t h;
  bool ok = m.tag == kRpcTag && m.size >= sizeof(h);
  if (ok) {
    std::memcpy(&h, m.buf, sizeof(h));
    int expected_src = (st.rank_me - 1 + st.rank_n) % st.rank_n;
    ok = h.rank == expected_src && m.rank == h.rank && h.thread >= 0 &&
         h.thread < st.cfg.nthreads && h.seq < st.cfg.nmsgs &&
         m.size == message_size(h.seq);
  }
  if (ok) {
    auto* p = static_cast<unsigned char*>(m.buf);
    for (size_t i = sizeof(h); i < m.size; ++i)
      if (p[i] != pattern(h, i)) ok = false;
    if (st.seen[h.thread][h.seq].exchange(1) != 0) ok = false;  // duplicate
  }
  if (!ok) st.errors.fetch_add(1);
  std::free(m.buf);
  st.received.fetch_add(1);
}

void worker(state_t& st, int tid, lci::device_t dev)
{
  device = dev;
  const int target = (st.rank_me + 1) % st.rank_n;
  const uint64_t expected = st.cfg.nmsgs * st.cfg.nthreads;
  uint64_t next = 0;
  while (next < st.cfg.nmsgs || st.received.load() < expected) {
    if (next < st.cfg.nmsgs) {
      header_t h{st.rank_me, tid, next};
      size_t size = message_size(next);
      auto* buf = static_cast<unsigned char*>(std::malloc(size));
      std::memcpy(buf, &h, sizeof(h));
      for (size_t i = sizeof(h); i < size; ++i) buf[i] = pattern(h, i);
      if (send_msg(target, buf, size, kRpcTag))
        ++next;
      else
        std::free(buf);
    }
    msg_t m;
    for (int i = 0; i < 4 && poll_msg(&m); ++i) check_message(st, m);
    do_background_work();
  }
  device = lci::device_t();
}

bool parse_count(const char* text, uint64_t max, uint64_t* out)
{
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v < 1 ||
      v > max)
    return false;
  *out = v;
  return true;
}

[[noreturn]] void usage(const char* prog, int status)
{
  std::fprintf(status ? stderr : stdout,
               "usage: %s [--threads T] [--msgs N]\n"
               "  -t, --threads T  threads per rank (default 2)\n"
               "  -m, --msgs N     messages per thread (default 50000)\n",
               prog);
  std::exit(status);
}

config_t parse_args(int argc, char** argv)
{
  config_t cfg;
  const option longopts[] = {{"threads", required_argument, nullptr, 't'},
                             {"msgs", required_argument, nullptr, 'm'},
                             {"help", no_argument, nullptr, 'h'},
                             {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "t:m:h", longopts, nullptr)) != -1) {
    if (c == 'h') usage(argv[0], 0);
    if (c != 't' && c != 'm') usage(argv[0], 2);  // getopt said what
    uint64_t v = 0;
    if (!parse_count(optarg, c == 't' ? 1024 : uint64_t(1) << 30, &v)) {
      std::fprintf(stderr, "irpc: --%s wants a positive integer, not '%s'\n",
                   c == 't' ? "threads" : "msgs", optarg);
      usage(argv[0], 2);
    }
    if (c == 't') cfg.nthreads = static_cast<int>(v);
    if (c == 'm') cfg.nmsgs = v;
  }
  if (optind != argc) {
    std::fprintf(stderr, "irpc: unexpected argument '%s'\n", argv[optind]);
    usage(argv[0], 2);
  }
  return cfg;
}

}  // namespace

int main(int argc, char** argv)
{
  state_t st;
  st.cfg = parse_args(argc, argv);
  try {
    global_init(&st.rank_me, &st.rank_n);
    st.seen = std::vector<std::vector<std::atomic<uint8_t>>>(st.cfg.nthreads);
    for (auto& v : st.seen) v = std::vector<std::atomic<uint8_t>>(st.cfg.nmsgs);

    std::vector<lci::device_t> devices;
    for (int t = 0; t < st.cfg.nthreads; ++t) devices.push_back(thread_init());
    std::vector<std::thread> threads;
    for (int t = 0; t < st.cfg.nthreads; ++t)
      threads.emplace_back(worker, std::ref(st), t, devices[t]);
    for (auto& th : threads) th.join();
    // drain: our last messages may still be in our peers' hands
    for (auto& d : devices) thread_fina(&d);

    uint64_t missing = 0;
    for (auto& v : st.seen)
      for (auto& s : v) missing += s.load() == 0;
    std::printf(
        "irpc: rank %d/%d, %d threads: received %llu messages, %llu bad, "
        "%llu missing\n",
        st.rank_me, st.rank_n, st.cfg.nthreads,
        static_cast<unsigned long long>(st.received.load()),
        static_cast<unsigned long long>(st.errors.load()),
        static_cast<unsigned long long>(missing));
    global_fina();
    return (st.errors.load() == 0 && missing == 0) ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "irpc: rank %d: %s\n", st.rank_me, e.what());
    return 1;
  }
}
