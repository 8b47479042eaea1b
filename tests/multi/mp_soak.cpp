// Soak test: every rank runs 2 threads, each on its own
// device with a tiny packet pool and send queue, posting a seeded random mix
// of send/recv, active messages, put, put with signal, get and get with
// signal, of sizes 0 / inject / eager / rendezvous, completed by sync, cq,
// handler, counter or graph, some with allow_retry(false). Every payload is
// a pattern of (source rank, tag, index) checked byte by byte; every message
// must arrive exactly once, every completion fire exactly once, and the
// pools, matching engine, registrations and rendezvous contexts return to
// their initial counts.
//
// Thread t of every rank talks to thread t of the others over device t.
// Send/recv streams (src, dst, t) carry tags 0, 1, 2, ...; the size of
// message s is a hash of (seed, src, dst, t, s), so the receiver posts
// exactly the right receives, at most kWindow ahead of what it has
// received. When the sender stops (count or time), a FIN message tells each
// peer the stream's final length (what it sent + kWindow more, which it then
// sends) and how many active messages and signals to expect.
//
// A run of 20 s or more also watches the process: once a second the main
// thread samples its resident set (/proc/self/statm), its open file
// descriptors (/proc/self/fd) and the messages checked so far (with
// SOAK_SAMPLES=1 it prints each sample, with glibc's heap (mallinfo2), the
// library's live objects and the RMA window's resident bytes). After the
// warm-up (half of the run, at least 5 s: over tcp between hosts the
// resident set still grows during the first half minute, then stays) the
// descriptors must be as many at the end as then and the resident set may
// grow by at most --rss-slack MiB (default 16; medians of 5 samples, at
// the end of the warm-up and at the end of the run); each rank prints both, and
// the message rate of the first and second half after the warm-up (a
// drift figure, not checked: the machine's load decides it).
//
// mp_soak [--seed S] [--count N] [--seconds T] [--rss-slack MIB]
//
// The seed (rank 0's, from --seed, else from SOAK_SEED, else random) is
// printed at the start, and every failure (a failed check, a stuck thread,
// an error the library raised) prints how to run the same mix again:
// `--seed S` with the same arguments, or `SOAK_SEED=S ctest -R <test>`
// (the environment reaches every rank under the launchers of the tests).
// The same seed gives the same operations, sizes and completions; the
// timing, and with it the interleaving, is the machine's.
#include <dirent.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <lci.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/introspect.hpp"

namespace
{

constexpr int kThreads = 2;
constexpr uint64_t kWindow = 4;       // receives posted ahead per stream
constexpr size_t kInflight = 12;      // operations in flight per thread
constexpr size_t kMaxSend = 3 << 20;  // largest send/recv and active message
constexpr size_t kMaxRma = 1 << 20;   // largest put or get
constexpr size_t kGetArea = 1 << 20;  // read-only area, target of gets
constexpr size_t kPutSlot = 1 << 20;  // per (src, thread): plain puts
constexpr size_t kSigArea = 4 << 20;  // per (src, thread): puts with signal

enum kind_t : uint64_t {
  k_sendrecv,
  k_am,
  k_put,
  k_putsig,
  k_get,
  k_getsig,
  k_fin,
  k_barrier,
  k_nkinds
};
const char* kKindNames[] = {"send/recv",  "am",  "put",
                            "put+signal", "get", "get+signal"};
enum comp_kind_t { c_sync, c_cq, c_handler, c_counter, c_graph, c_nkinds };
const char* kCompNames[] = {"sync", "cq", "handler", "counter", "graph"};

uint64_t make_tag(uint64_t kind, int t, uint64_t seq)
{
  return (kind << 56) | (static_cast<uint64_t>(t) << 48) | seq;
}
uint64_t tag_kind(uint64_t tag) { return tag >> 56; }
int tag_thread(uint64_t tag) { return static_cast<int>((tag >> 48) & 0xff); }
uint64_t tag_seq(uint64_t tag) { return tag & ((1ull << 48) - 1); }

uint64_t mix(uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// The byte at index i of a payload from rank `src` with key `key`.
inline uint8_t pattern(int src, uint64_t key, size_t i)
{
  uint64_t h = (static_cast<uint64_t>(src) * 0x9e3779b97f4a7c15ull) ^
               (key * 0xbf58476d1ce4e5b9ull);
  return static_cast<uint8_t>((h >> 24) + i * 131 + (i >> 8) * 7 +
                              (i >> 16) * 3);
}
void fill(void* buf, size_t n, int src, uint64_t key)
{
  auto* p = static_cast<uint8_t*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] = pattern(src, key, i);
}

std::atomic<int> g_failures{0};
void print_replay();
#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      std::fprintf(stderr, "rank %d: CHECK failed: %s: ", g_rank, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                  \
      std::fprintf(stderr, "\n");                                         \
      g_failures.fetch_add(1);                                            \
      print_replay();                                                     \
      std::fflush(stderr);                                                \
      std::abort();                                                       \
    }                                                                     \
  } while (0)
int g_rank = 0, g_nranks = 1;

bool check(const void* buf, size_t n, int src, uint64_t key, size_t off = 0)
{
  auto* p = static_cast<const uint8_t*>(buf);
  for (size_t i = 0; i < n; ++i)
    if (p[i] != pattern(src, key, off + i)) {
      std::fprintf(stderr,
                   "rank %d: byte %zu of %zu from rank %d key %#" PRIx64
                   " is %u, expected %u\n",
                   g_rank, i, n, src, key, p[i], pattern(src, key, off + i));
      return false;
    }
  return true;
}

// A size class: 0, inject (<= 64), eager (<= eager limit), rendezvous.
size_t pick_size(uint64_t r, size_t eager, size_t max)
{
  unsigned c = r % 100;
  r = mix(r);
  if (c < 10) return 0;
  if (c < 40) return 1 + r % 64;
  if (c < 75) return 65 + r % (eager - 64);
  if (c < 97) return eager + 1 + r % (64 * 1024);
  return eager + 1 + r % (max - eager);
}

struct options_t {
  uint64_t seed = 0;
  uint64_t count = 2000;  // operations per thread
  double seconds = 20;    // posting stops after this
  double rss_slack = 16;  // MiB the resident set may grow after warm-up
};
options_t g_opt;
std::string g_args;  // the arguments other than --seed, for print_replay

// How to run this mix again (the seed in force: every rank's is rank 0's
// once the ranks have agreed on it).
void print_replay()
{
  std::fprintf(stderr,
               "rank %d: mp_soak: replay this mix with: mp_soak --seed %" PRIu64
               "%s (same ranks and environment), or SOAK_SEED=%" PRIu64
               " ctest -R <this test>\n",
               g_rank, g_opt.seed, g_args.c_str(), g_opt.seed);
  std::fflush(stderr);
}

// An exception nobody caught (a fatal_error of the library, e.g. a peer
// declared failed, in a worker thread): said with the replay line.
[[noreturn]] void on_terminate()
{
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      std::fprintf(stderr, "rank %d: mp_soak: uncaught exception: %s\n", g_rank,
                   x.what());
    } catch (...) {
      std::fprintf(stderr, "rank %d: mp_soak: uncaught exception\n", g_rank);
    }
  }
  print_replay();
  std::abort();
}

constexpr uint64_t kFinMagic = 0x46494e5f736f616bull;
struct fin_t {
  uint64_t magic;
  uint64_t sr_final;            // send/recv stream length
  uint64_t am, putsig, getsig;  // how many of each were sent
  uint64_t put_last_tag;        // the last plain put into the slot, if any
  uint64_t put_last_size;
  uint64_t nput;
};

struct totals_t {
  std::atomic<uint64_t> messages{0}, bytes{0}, retries{0}, backlog{0},
      completions{0}, posts[k_nkinds]{}, comps[c_nkinds]{};
};
totals_t g_tot;

struct op_t;
struct thread_ctx_t;

// One posting: its parameters, buffer and completion bookkeeping.
struct op_t {
  uint64_t kind = 0;
  bool in = false;  // a receive (k_sendrecv with direction IN) or a get
  int peer = 0;
  uint64_t tag = 0;
  size_t size = 0;
  uint64_t disp = 0;
  int comp = c_sync;
  bool allow_retry = true;
  std::vector<uint8_t> buf;
  lci::comp_t sync, graph;
  bool posted = false;  // the post said posted: one signal expected
  std::atomic<int> fired{0};
  size_t expected = 0;  // a stream receive: the size the sender sends
  // the error its completion carried, if any (written before `fired`)
  std::string failure;
};

// A completion with an error: retire() reports it by name, before it
// would read the buffer as if the operation had succeeded; a graph's run
// ends with its first failure. (A counter says only that its operations
// ended: their errors are not seen.)
void note_status(op_t* op, const lci::status_t& s)
{
  if (!s.is_done()) op->failure = s.error.get_str();
}

struct thread_ctx_t {
  int t = 0;
  lci::device_t dev;
  lci::packet_pool_t pool;
  lci::comp_t cq, handler, counter;
  lci::comp_t rcomp_obj;  // target of active messages and signals
  int64_t counter_expected = 0;
  std::vector<op_t*> counter_ops;
  std::vector<op_t*> inflight;
  std::vector<op_t*> to_post;  // retried posts
  std::mt19937_64 rng;
  // per peer: send/recv stream, counts
  std::vector<uint64_t> sr_sent, sr_recv_posted, sr_recv_done, sr_final;
  std::vector<uint64_t> sr_prefix;  // receives complete: 0..prefix-1
  std::vector<std::vector<uint8_t>> sr_done;
  std::vector<uint64_t> am_sent, putsig_sent, getsig_sent, sig_bump;
  std::vector<uint64_t> am_got, putsig_got, getsig_got;
  std::vector<std::vector<uint8_t>> seen;  // [peer*3 + k] bitmaps
  std::vector<bool> fin_got;
  std::vector<fin_t> fins;
  std::vector<bool> put_busy;
  std::vector<uint64_t> put_last_tag, put_last_size, nput;
  uint64_t ops_started = 0;
  bool stopped = false;
  uint64_t handler_signals = 0, handler_expected = 0;
};

thread_ctx_t g_ctx[kThreads];
thread_local thread_ctx_t* t_ctx = nullptr;
// A finished worker keeps progressing its device until every rank's
// workers have finished: a peer's put or get may still need this rank's
// progress (libfabric tcp and the native shm fallback serve one-sided
// operations in the target's progress).
std::atomic<int> g_workers_finished{0};
std::atomic<bool> g_all_finished{false};
lci::rcomp_t g_rcomp[kThreads];
std::vector<lci::rmr_t> g_rmrs;  // the window of every rank
char* g_window = nullptr;
size_t g_window_size = 0;
size_t g_eager = 0;

size_t put_slot_off(int src, int t)
{
  return kGetArea + (static_cast<size_t>(src) * kThreads + t) * kPutSlot;
}
size_t sig_off(int src, int t)
{
  return kGetArea + static_cast<size_t>(g_nranks) * kThreads * kPutSlot +
         (static_cast<size_t>(src) * kThreads + t) * kSigArea;
}

// the send/recv stream's message size: known to both ends
size_t sr_size(int src, int dst, int t, uint64_t seq)
{
  return pick_size(
      mix(g_opt.seed ^ mix((uint64_t(src) << 40) ^ (uint64_t(dst) << 32) ^
                           (uint64_t(t) << 24) ^ seq)),
      g_eager, kMaxSend);
}

void mark_seen(thread_ctx_t& c, int src, int k, uint64_t seq)
{
  std::vector<uint8_t>& v = c.seen[src * 3 + k];
  if (v.size() <= seq) v.resize(seq + 1, 0);
  CHECK(v[seq] == 0, "message kind %d seq %" PRIu64 " from rank %d twice", k,
        seq, src);
  v[seq] = 1;
}

// A remote completion (active message or signal) at this thread.
void on_remote(const lci::status_t& s)
{
  thread_ctx_t& c = *t_ctx;
  uint64_t kind = tag_kind(s.tag);
  uint64_t seq = tag_seq(s.tag);
  CHECK(tag_thread(s.tag) == c.t, "remote completion of thread %d at %d",
        tag_thread(s.tag), c.t);
  CHECK(s.rank >= 0 && s.rank < g_nranks, "rank %d", s.rank);
  if (kind == k_am) {
    CHECK(check(s.buffer, s.size, s.rank, s.tag), "am payload");
    std::free(s.buffer);
    mark_seen(c, s.rank, 0, seq);
    ++c.am_got[s.rank];
  } else if (kind == k_putsig) {
    auto* p = static_cast<char*>(s.buffer);
    CHECK(s.size == 0 ||
              (p >= g_window + sig_off(s.rank, c.t) &&
               p + s.size <= g_window + sig_off(s.rank, c.t) + kSigArea),
          "put signal address outside the slot");
    CHECK(check(s.buffer, s.size, s.rank, s.tag), "put+signal payload");
    mark_seen(c, s.rank, 1, seq);
    ++c.putsig_got[s.rank];
  } else if (kind == k_getsig) {
    mark_seen(c, s.rank, 2, seq);
    ++c.getsig_got[s.rank];
  } else {
    CHECK(false, "remote completion with tag %#" PRIx64, s.tag);
  }
  g_tot.messages++;
  g_tot.bytes += (kind == k_getsig ? 0 : s.size);
}

void local_handler(lci::status_t s)
{
  auto* op = static_cast<op_t*>(s.user_context);
  CHECK(op != nullptr, "handler without context");
  note_status(op, s);
  op->fired.fetch_add(1);
  t_ctx->handler_signals++;
}
void rcomp_handler(lci::status_t s) { on_remote(s); }

// Builds the post_comm of `op` (its completion object already chosen).
lci::post_comm_x make_post(thread_ctx_t& c, op_t* op, lci::comp_t comp)
{
  lci::direction_t dir = op->in ? lci::direction_t::IN : lci::direction_t::OUT;
  lci::post_comm_x x(dir, op->peer, op->buf.empty() ? nullptr : op->buf.data(),
                     op->size, comp);
  x.device(c.dev).tag(op->tag).user_context(op);
  if (op->kind == k_am) x.remote_comp(g_rcomp[c.t]);
  if (op->kind == k_put || op->kind == k_putsig || op->kind == k_get ||
      op->kind == k_getsig)
    x.rmr(g_rmrs[op->peer]).remote_disp(op->disp);
  if (op->kind == k_putsig || op->kind == k_getsig) x.remote_comp(g_rcomp[c.t]);
  // plain puts to one slot are serialized on their completion: it must mean
  // the data landed (network), not only that the source is reusable
  // (memory), or an earlier large put could land after a later small one
  if (op->kind == k_put) x.comp_semantic(lci::comp_semantic_t::network);
  if (!op->allow_retry) x.allow_retry(false);
  return x;
}

// Posts op once; true unless retry.
bool try_post(thread_ctx_t& c, op_t* op)
{
  lci::comp_t comp;
  switch (op->comp) {
    case c_sync:
      if (op->sync.is_empty()) op->sync = lci::alloc_sync();
      comp = op->sync;
      break;
    case c_cq:
      comp = c.cq;
      break;
    case c_handler:
      comp = c.handler;
      break;
    case c_counter:
      comp = c.counter;
      break;
    case c_graph:
      break;
  }
  if (op->comp == c_graph) {
    op->graph = lci::alloc_graph();
    lci::graph_add_node_op(op->graph, make_post(c, op, lci::COMP_NULL));
    lci::graph_start(op->graph);
    op->posted = true;
    c.inflight.push_back(op);
    return true;
  }
  lci::status_t s = make_post(c, op, comp)();
  if (s.is_retry()) {
    CHECK(op->allow_retry, "retry with allow_retry(false)");
    g_tot.retries++;
    return false;
  }
  if (s.error.errorcode == lci::errorcode_t::posted_backlog ||
      s.error.errorcode == lci::errorcode_t::done_backlog)
    g_tot.backlog++;
  op->posted = s.is_posted();
  if (op->in && s.is_done() && op->kind == k_sendrecv)
    CHECK(s.size == op->expected || s.size == sizeof(fin_t),
          "receive size %zu, expected %zu", s.size, op->size);
  if (op->comp == c_counter && op->posted) {
    c.counter_expected++;
    c.counter_ops.push_back(op);
  } else if (op->comp == c_handler && op->posted) {
    c.handler_expected++;
  }
  c.inflight.push_back(op);
  return true;
}

// The op completed: check its data and its bookkeeping, free it.
void retire(thread_ctx_t& c, op_t* op)
{
  CHECK(op->failure.empty(), "%s %s with rank %d completed with %s",
        op->kind < 6 ? kKindNames[op->kind] : "fin/barrier",
        kCompNames[op->comp], op->peer, op->failure.c_str());
  if (op->comp != c_counter && op->comp != c_graph && op->comp != c_sync)
    CHECK(op->fired.load() == (op->posted ? 1 : 0),
          "%s op fired %d times (posted %d)", kCompNames[op->comp],
          op->fired.load(), op->posted);
  if (op->kind == k_sendrecv && op->in) {
    uint64_t magic;
    std::memcpy(&magic, op->buf.data(), sizeof magic);
    int p = op->peer;
    if (magic == kFinMagic) {  // the FIN of the stream
      CHECK(!c.fin_got[p], "two FINs from rank %d", p);
      std::memcpy(&c.fins[p], op->buf.data(), sizeof(fin_t));
      c.fin_got[p] = true;
      c.sr_final[p] = c.fins[p].sr_final;
      CHECK(tag_seq(op->tag) + 1 + kWindow == c.sr_final[p], "FIN seq");
    } else {
      CHECK(check(op->buf.data(), op->expected, p, op->tag),
            "send/recv payload");
      g_tot.messages++;
      g_tot.bytes += op->expected;
    }
    c.sr_recv_done[p]++;
    uint64_t seq = tag_seq(op->tag);
    if (c.sr_done[p].size() <= seq) c.sr_done[p].resize(seq + 1, 0);
    CHECK(c.sr_done[p][seq] == 0, "stream message %" PRIu64 " twice", seq);
    c.sr_done[p][seq] = 1;
    while (c.sr_prefix[p] < c.sr_done[p].size() && c.sr_done[p][c.sr_prefix[p]])
      ++c.sr_prefix[p];
  } else if (op->kind == k_get || op->kind == k_getsig) {
    CHECK(check(op->buf.data(), op->size, op->peer, 0x6e7, op->disp),
          "get payload");
    g_tot.messages++;
    g_tot.bytes += op->size;
  } else if (op->kind == k_put) {
    c.put_busy[op->peer] = false;
  }
  if (!op->sync.is_empty()) lci::free_comp(&op->sync);
  if (!op->graph.is_empty()) lci::free_comp(&op->graph);
  g_tot.completions++;
  delete op;
}

void poll(thread_ctx_t& c)
{
  lci::progress_x().device(c.dev)();
  for (;;) {
    lci::status_t s = lci::cq_pop(c.cq);
    if (s.is_retry()) break;
    auto* op = static_cast<op_t*>(s.user_context);
    note_status(op, s);
    op->fired.fetch_add(1);
  }
  if (c.t == 0)
    for (;;) {
      lci::status_t s = lci::cq_pop(c.rcomp_obj);
      if (s.is_retry()) break;
      on_remote(s);
    }
  // the counter: all its ops complete at once when it caught up
  if (!c.counter_ops.empty() &&
      lci::counter_get(c.counter) == c.counter_expected) {
    for (op_t* op : c.counter_ops) op->fired.store(1);
    c.counter_ops.clear();
  }
  for (size_t i = 0; i < c.inflight.size();) {
    op_t* op = c.inflight[i];
    bool complete = !op->posted;
    if (!complete) switch (op->comp) {
        case c_sync: {
          lci::status_t st;
          complete = lci::sync_test(op->sync, &st);
          if (complete) note_status(op, st);
          if (complete && op->in && op->kind == k_sendrecv)
            CHECK(st.size == op->expected || st.size == sizeof(fin_t),
                  "size %zu, expected %zu", st.size, op->size);
          break;
        }
        case c_graph: {
          // a failed operation of the graph ends the run with its error
          const lci::status_t st = lci::graph_test(op->graph);
          complete = !st.is_retry();
          if (complete) note_status(op, st);
          break;
        }
        default:
          complete = op->fired.load() >= 1;
      }
    if (complete) {
      c.inflight[i] = c.inflight.back();
      c.inflight.pop_back();
      retire(c, op);
    } else {
      ++i;
    }
  }
}

void post_or_queue(thread_ctx_t& c, op_t* op)
{
  g_tot.posts[op->kind < k_nkinds ? op->kind : 0]++;
  g_tot.comps[op->comp]++;
  if (!try_post(c, op)) c.to_post.push_back(op);
}

// debugging knobs: SOAK_NO_BACKLOG=1, SOAK_COMPS=<bit mask of comp kinds>
bool g_no_backlog = false;
unsigned g_comps = 31;

int pick_comp(thread_ctx_t& c, bool allow_graph = true)
{
  for (;;) {
    int k = static_cast<int>(c.rng() % c_nkinds);
    if (!(g_comps >> k & 1)) continue;
    if (k == c_graph && !allow_graph) continue;
    // a counter completes its ops in batches: keep the batches small
    if (k == c_counter && c.counter_ops.size() >= 6) k = c_sync;
    return k;
  }
}

op_t* new_op(thread_ctx_t& c, uint64_t kind, bool in, int peer, size_t size)
{
  op_t* op = new op_t;
  op->kind = kind;
  op->in = in;
  op->peer = peer;
  op->size = size;
  op->buf.resize(size);
  op->comp = pick_comp(c);
  // A counter retires its ops as a batch, and a stream's receives are
  // posted only kWindow past the first one not retired: a rendezvous send
  // in a batch may wait for the peer's window, held up by the peer's own
  // batch, which holds one of this thread's receives back: a cycle of the
  // test, not of the library. Sends of the streams never use the counter.
  if (op->comp == c_counter && kind == k_sendrecv && !in) op->comp = c_sync;
  op->allow_retry = op->comp == c_graph || c.rng() % 5 != 0 || g_no_backlog;
  return op;
}

// Receives of the send/recv streams, up to kWindow ahead, and never past a
// stream's announced end.
void post_receives(thread_ctx_t& c)
{
  for (int src = 0; src < g_nranks; ++src) {
    if (src == g_rank) continue;
    while (c.sr_recv_posted[src] < c.sr_prefix[src] + kWindow &&
           c.sr_recv_posted[src] < c.sr_final[src]) {
      uint64_t seq = c.sr_recv_posted[src]++;
      size_t expected = sr_size(src, g_rank, c.t, seq);
      // room for the FIN, which may take any sequence number
      op_t* op =
          new_op(c, k_sendrecv, true, src, std::max(expected, sizeof(fin_t)));
      op->expected = expected;
      op->tag = make_tag(k_sendrecv, c.t, seq);
      post_or_queue(c, op);
    }
  }
}

void send_sr(thread_ctx_t& c, int peer)
{
  uint64_t seq = c.sr_sent[peer]++;
  op_t* op =
      new_op(c, k_sendrecv, false, peer, sr_size(g_rank, peer, c.t, seq));
  op->tag = make_tag(k_sendrecv, c.t, seq);
  fill(op->buf.data(), op->size, g_rank, op->tag);
  post_or_queue(c, op);
}

// One random operation to a random peer.
void start_random(thread_ctx_t& c)
{
  int peer = static_cast<int>(c.rng() % (g_nranks - 1));
  if (peer >= g_rank) ++peer;
  uint64_t kind = c.rng() % 6;
  if (kind == k_put && c.put_busy[peer]) kind = k_get;
  size_t size = pick_size(c.rng(), g_eager, kind <= k_am ? kMaxSend : kMaxRma);
  if (kind == k_putsig && c.sig_bump[peer] + size > kSigArea) kind = k_getsig;
  switch (kind) {
    case k_sendrecv:
      send_sr(c, peer);
      return;
    case k_am: {
      op_t* op = new_op(c, k_am, false, peer, size);
      op->tag = make_tag(k_am, c.t, c.am_sent[peer]++);
      fill(op->buf.data(), size, g_rank, op->tag);
      post_or_queue(c, op);
      return;
    }
    case k_put: {
      op_t* op = new_op(c, k_put, false, peer, size);
      op->tag = make_tag(k_put, c.t, c.nput[peer]++);
      op->disp = put_slot_off(g_rank, c.t);
      fill(op->buf.data(), size, g_rank, op->tag);
      c.put_busy[peer] = true;
      c.put_last_tag[peer] = op->tag;
      c.put_last_size[peer] = size;
      post_or_queue(c, op);
      return;
    }
    case k_putsig: {
      op_t* op = new_op(c, k_putsig, false, peer, size);
      op->tag = make_tag(k_putsig, c.t, c.putsig_sent[peer]++);
      op->disp = sig_off(g_rank, c.t) + c.sig_bump[peer];
      c.sig_bump[peer] += size;
      fill(op->buf.data(), size, g_rank, op->tag);
      post_or_queue(c, op);
      return;
    }
    default: {  // get, get with signal: from the target's read-only area
      op_t* op = new_op(c, kind, true, peer, size);
      op->disp = c.rng() % (kGetArea - size + 1);
      uint64_t seq = kind == k_getsig ? c.getsig_sent[peer]++ : 0;
      op->tag = make_tag(kind, c.t, seq);
      post_or_queue(c, op);
      return;
    }
  }
}

// Operations this thread started (the stream receives, posted ahead for
// every peer, do not count).
size_t active_ops(const thread_ctx_t& c)
{
  size_t n = 0;
  for (const op_t* op : c.inflight) n += !(op->kind == k_sendrecv && op->in);
  for (const op_t* op : c.to_post) n += !(op->kind == k_sendrecv && op->in);
  return n;
}

bool all_fins(thread_ctx_t& c)
{
  for (int p = 0; p < g_nranks; ++p)
    if (p != g_rank && !c.fin_got[p]) return false;
  return true;
}

bool finished(thread_ctx_t& c)
{
  if (!c.stopped || !c.inflight.empty() || !c.to_post.empty() || !all_fins(c))
    return false;
  for (int p = 0; p < g_nranks; ++p) {
    if (p == g_rank) continue;
    const fin_t& f = c.fins[p];
    if (c.sr_recv_done[p] != f.sr_final || c.am_got[p] != f.am ||
        c.putsig_got[p] != f.putsig || c.getsig_got[p] != f.getsig)
      return false;
  }
  return true;
}

// What a stuck thread still waits for.
void dump(thread_ctx_t& c)
{
  std::fprintf(stderr, "rank %d thread %d: %zu in flight, %zu to post\n",
               g_rank, c.t, c.inflight.size(), c.to_post.size());
  for (op_t* op : c.inflight)
    std::fprintf(stderr,
                 "  %s %s peer %d tag %#" PRIx64
                 " size %zu comp %s posted %d "
                 "fired %d retry %d\n",
                 op->kind < 6 ? kKindNames[op->kind] : "fin/barrier",
                 op->in ? "in" : "out", op->peer, op->tag, op->size,
                 kCompNames[op->comp], op->posted, op->fired.load(),
                 op->allow_retry);
  for (int p = 0; p < g_nranks; ++p)
    if (p != g_rank)
      std::fprintf(
          stderr,
          "  peer %d: fin %d sr sent %" PRIu64 " recv posted %" PRIu64
          " done %" PRIu64 " final %" PRIu64 "; am %" PRIu64 "/%" PRIu64
          " putsig %" PRIu64 "/%" PRIu64 " getsig %" PRIu64 "/%" PRIu64 "\n",
          p, int(c.fin_got[p]), c.sr_sent[p], c.sr_recv_posted[p],
          c.sr_recv_done[p], c.sr_final[p], c.am_got[p], c.fins[p].am,
          c.putsig_got[p], c.fins[p].putsig, c.getsig_got[p], c.fins[p].getsig);
  auto k = lci::introspect::get_counts(lci::runtime_t(), c.dev, c.pool);
  std::fprintf(stderr,
               "  pool %zu/%zu recvs %" PRId64 " sends %" PRId64 " ops %" PRId64
               " backlog %zu me %zu\n",
               k.pool_free, k.pool_npackets, k.recvs_posted, k.sends_pending,
               k.ops_pending, k.backlog, k.me_entries);
  std::string net = lci::introspect::net_state(lci::runtime_t(), c.dev);
  if (!net.empty()) std::fprintf(stderr, "  net: %s\n", net.c_str());
}

void worker(int t, std::chrono::steady_clock::time_point deadline,
            std::chrono::steady_clock::time_point hard_deadline)
{
  thread_ctx_t& c = g_ctx[t];
  t_ctx = &c;
  bool dumped = false;
  while (!finished(c)) {
    // a stuck thread says what it waits for, 10 s before it gives up
    if (!dumped && std::chrono::steady_clock::now() >=
                       hard_deadline - std::chrono::seconds(10)) {
      dump(c);
      dumped = true;
    }
    CHECK(std::chrono::steady_clock::now() < hard_deadline,
          "thread %d: no progress before the hard deadline (inflight %zu)", t,
          c.inflight.size());
    // retried posts first, in order
    while (!c.to_post.empty()) {
      if (!try_post(c, c.to_post.front())) break;
      c.to_post.erase(c.to_post.begin());
    }
    post_receives(c);
    if (!c.stopped) {
      if (c.ops_started >= g_opt.count ||
          std::chrono::steady_clock::now() >= deadline) {
        c.stopped = true;
        for (int p = 0; p < g_nranks; ++p) {
          if (p == g_rank) continue;
          // the FIN is the stream's next message; then the window's worth
          // of messages the receiver may have posted receives for
          uint64_t seq = c.sr_sent[p]++;
          op_t* op = new_op(c, k_sendrecv, false, p, sizeof(fin_t));
          op->tag = make_tag(k_sendrecv, t, seq);
          fin_t f{kFinMagic,          seq + 1 + kWindow, c.am_sent[p],
                  c.putsig_sent[p],   c.getsig_sent[p],  c.put_last_tag[p],
                  c.put_last_size[p], c.nput[p]};
          std::memcpy(op->buf.data(), &f, sizeof f);
          post_or_queue(c, op);
          for (uint64_t i = 0; i < kWindow; ++i) send_sr(c, p);
        }
      } else if (active_ops(c) < kInflight) {
        ++c.ops_started;
        start_random(c);
      }
    }
    poll(c);
  }
  if (std::getenv("SOAK_VERBOSE"))
    for (int p = 0; p < g_nranks; ++p)
      if (p != g_rank)
        std::fprintf(stderr,
                     "rank %d thread %d done: to %d sent %" PRIu64
                     ", from %d received %" PRIu64 "\n",
                     g_rank, t, p, c.sr_sent[p], p, c.sr_recv_done[p]);
  // drain: nothing of this thread may remain in flight
  lci::wait_drained_x().device(c.dev)();
  g_workers_finished.fetch_add(1);
  while (!g_all_finished.load()) {
    CHECK(std::chrono::steady_clock::now() < hard_deadline,
          "thread %d: the other ranks did not finish before the hard deadline",
          t);
    lci::progress_x().device(c.dev)();
  }
}

// Sends `v` to every peer and receives theirs on the default device.
// the collectives' own matching engine: a peer's next collective message
// may arrive early, and must not count as an entry of the default engine
lci::matching_engine_t g_coll_me;

template <typename T>
std::vector<T> allgather(const T& v, uint64_t tag)
{
  std::vector<T> out(g_nranks);
  std::vector<lci::comp_t> syncs(g_nranks);
  out[g_rank] = v;
  for (int p = 0; p < g_nranks; ++p) {
    if (p == g_rank) continue;
    syncs[p] = lci::alloc_sync();
    lci::status_t s;
    do {
      s = lci::post_recv_x(p, &out[p], sizeof(T), tag, syncs[p])
              .matching_engine(g_coll_me)();
      if (s.is_retry()) lci::progress();
    } while (s.is_retry());
    if (s.is_done()) lci::comp_signal(syncs[p], s);
  }
  for (int p = 0; p < g_nranks; ++p) {
    if (p == g_rank) continue;
    T copy = v;
    lci::post_send_x(p, &copy, sizeof(T), tag, lci::COMP_NULL)
        .matching_engine(g_coll_me)();
  }
  for (int p = 0; p < g_nranks; ++p) {
    if (p == g_rank) continue;
    lci::sync_wait(syncs[p], nullptr);
    lci::free_comp(&syncs[p]);
  }
  return out;
}

std::string str(const lci::introspect::counts_t& c)
{
  char b[400];
  std::snprintf(b, sizeof b,
                "pool %zu/%zu free, recvs posted %" PRId64
                ", sends pending %" PRId64 ", ops pending %" PRId64
                ", backlog %zu, matching entries %zu, user mrs %zu, "
                "registrations %" PRId64 ", rdv contexts %zu",
                c.pool_free, c.pool_npackets, c.recvs_posted, c.sends_pending,
                c.ops_pending, c.backlog, c.me_entries, c.user_mrs,
                c.net_registrations, c.rdv_ctxs);
  return b;
}

// The process's resources at one moment of the run.
struct sample_t {
  double t;           // seconds since the start
  uint64_t rss;       // resident bytes
  int fds;            // open file descriptors
  uint64_t messages;  // checked so far
  // the heap as glibc sees it (mallinfo2): bytes in use in the arenas,
  // free in them, and in chunks of their own mapping (large blocks)
  uint64_t heap_used = 0, heap_free = 0, heap_mapped = 0;
  // the library's live objects (introspect.hpp; approximate while the
  // workers run): matching engine entries, rendezvous contexts, backend
  // registrations
  uint64_t me_entries = 0, rdv_ctxs = 0;
  int64_t registrations = 0;
  // resident bytes of the RMA window (all of it, faulted in at the start)
  uint64_t window_rss = 0;
};

uint64_t resident_bytes(const char* p, size_t n)
{
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t a = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  const size_t len = reinterpret_cast<uintptr_t>(p) + n - a;
  std::vector<unsigned char> v((len + page - 1) / page);
  if (mincore(reinterpret_cast<void*>(a), len, v.data()) != 0) return 0;
  uint64_t pages = 0;
  for (unsigned char c : v) pages += c & 1;
  return pages * page;
}

sample_t take_sample(double t)
{
  sample_t s{t, 0, 0, g_tot.messages.load()};
  const struct mallinfo2 mi = mallinfo2();
  s.heap_used = mi.uordblks;
  s.heap_free = mi.fordblks;
  s.heap_mapped = mi.hblkhd;
  const auto k = lci::introspect::get_counts(lci::runtime_t(), g_ctx[0].dev,
                                             g_ctx[0].pool);
  s.me_entries = k.me_entries;
  s.rdv_ctxs = k.rdv_ctxs;
  s.registrations = k.net_registrations;
  if (g_window) s.window_rss = resident_bytes(g_window, g_window_size);
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    unsigned long size = 0, resident = 0;
    if (std::fscanf(f, "%lu %lu", &size, &resident) == 2)
      s.rss = uint64_t(resident) * uint64_t(sysconf(_SC_PAGESIZE));
    std::fclose(f);
  }
  if (DIR* d = opendir("/proc/self/fd")) {
    while (struct dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++s.fds;
    closedir(d);
    --s.fds;  // the directory's own
  }
  return s;
}

// Checks and prints what the samples say (runs of 20 s or more).
void report_samples(const std::vector<sample_t>& v)
{
  if (g_opt.seconds < 20 || v.size() < 4) return;
  const double warm = std::max(5.0, g_opt.seconds / 2);
  size_t w = 0;
  while (w + 1 < v.size() && v[w].t < warm) ++w;
  const sample_t& a = v[w];
  const sample_t& z = v.back();
  const sample_t& m = v[w + (v.size() - 1 - w) / 2];
  uint64_t peak = 0;
  int max_fds = 0;
  for (size_t i = w; i < v.size(); ++i) {
    peak = std::max(peak, v[i].rss);
    max_fds = std::max(max_fds, v[i].fds);
  }
  auto rate = [](const sample_t& x, const sample_t& y) {
    return y.t > x.t ? double(y.messages - x.messages) / (y.t - x.t) : 0.0;
  };
  const double mib = 1024.0 * 1024.0;
  if (std::getenv("SOAK_SAMPLES"))
    for (const sample_t& x : v)
      std::fprintf(stderr,
                   "rank %d sample %.0f s: rss %.1f MiB fds %d msgs %" PRIu64
                   " heap used %.1f free %.1f mapped %.1f MiB, window "
                   "resident %.1f MiB, me %" PRIu64 " rdv %" PRIu64
                   " regs %" PRId64 "\n",
                   g_rank, x.t, x.rss / mib, x.fds, x.messages,
                   x.heap_used / mib, x.heap_free / mib, x.heap_mapped / mib,
                   x.window_rss / mib, x.me_entries, x.rdv_ctxs,
                   x.registrations);
  std::printf(
      "mp_soak: rank %d after warm-up (%.0f s) to end (%.0f s): rss "
      "%.1f -> %.1f MiB (peak %.1f), fds %d -> %d (max %d), "
      "messages/s %.0f then %.0f\n",
      g_rank, a.t, z.t, a.rss / mib, z.rss / mib, peak / mib, a.fds, z.fds,
      max_fds, rate(a, m), rate(m, z));
  // (the peer liveness check may hold a /proc file open at a sample: the
  // maximum is printed, not checked)
  CHECK(z.fds == a.fds,
        "open descriptors not flat: %d after warm-up, %d at "
        "the end",
        a.fds, z.fds);
  // the resident set of the last 5 samples against the 5 from the end of
  // the warm-up, medians: a sample may catch a few 3 MiB messages in flight
  auto median_rss = [&](size_t from) {
    std::vector<uint64_t> r;
    for (size_t i = from; i < v.size() && r.size() < 5; ++i)
      r.push_back(v[i].rss);
    std::sort(r.begin(), r.end());
    return double(r[r.size() / 2]);
  };
  const double base = median_rss(w);
  const double last = median_rss(v.size() >= 5 ? v.size() - 5 : 0);
  std::printf(
      "mp_soak: rank %d rss medians after warm-up %.1f MiB, at the "
      "end %.1f MiB (drift %+.1f MiB)\n",
      g_rank, base / mib, last / mib, (last - base) / mib);
  CHECK(last <= base + g_opt.rss_slack * mib,
        "resident set grew by %.1f MiB after warm-up (--rss-slack %.0f)",
        (last - base) / mib, g_opt.rss_slack);
}

}  // namespace

int main(int argc, char** argv)
{
  std::set_terminate(&on_terminate);
  g_opt.seed = std::random_device()();
  if (const char* e = std::getenv("SOAK_SEED")) {
    char* end = nullptr;
    g_opt.seed = std::strtoull(e, &end, 0);
    if (*e == '\0' || *end != '\0') {
      std::fprintf(stderr, "mp_soak: SOAK_SEED '%s' is not a number\n", e);
      return 2;
    }
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seed") {
      const char* v = next();
      char* end = nullptr;
      g_opt.seed = std::strtoull(v, &end, 0);
      if (*v == '\0' || *end != '\0') {
        std::fprintf(stderr, "mp_soak: --seed '%s' is not a number\n", v);
        return 2;
      }
      continue;
    }
    if (a == "--count")
      g_opt.count = std::strtoull(next(), nullptr, 0);
    else if (a == "--seconds")
      g_opt.seconds = std::strtod(next(), nullptr);
    else if (a == "--rss-slack")
      g_opt.rss_slack = std::strtod(next(), nullptr);
    else {
      std::fprintf(stderr,
                   "usage: mp_soak [--seed S] [--count N] [--seconds T] "
                   "[--rss-slack MIB]\n");
      return 2;
    }
  }
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--seed") {
      ++i;
      continue;
    }
    g_args += " ";
    g_args += argv[i];
  }
  if (const char* e = std::getenv("SOAK_NO_BACKLOG")) g_no_backlog = *e == '1';
  if (const char* e = std::getenv("SOAK_COMPS")) g_comps = std::atoi(e);
  lci::g_runtime_init();
  g_coll_me = lci::alloc_matching_engine();
  g_rank = lci::get_rank_me();
  g_nranks = lci::get_rank_n();
  if (g_nranks < 2) {
    std::fprintf(stderr, "mp_soak needs at least 2 ranks\n");
    return 2;
  }
  // every rank uses rank 0's seed
  g_opt.seed = allgather<uint64_t>(g_opt.seed, 1)[0];
  if (g_rank == 0)
    std::printf("mp_soak: %d ranks x %d threads, seed %" PRIu64
                ", count %" PRIu64 " per thread, %.0f s\n",
                g_nranks, kThreads, g_opt.seed, g_opt.count, g_opt.seconds);
  std::fflush(stdout);

  // the window: gets read its first kGetArea bytes, puts write the rest
  g_window_size = kGetArea + static_cast<size_t>(g_nranks) * kThreads *
                                 (kPutSlot + kSigArea);
  g_window = static_cast<char*>(std::calloc(g_window_size, 1));
  // every page resident from the start: the peers' puts would otherwise
  // fault its pages in over minutes, which the resident-set check after
  // the warm-up would count as growth
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t i = 0; i < g_window_size; i += page)
    static_cast<volatile char*>(g_window)[i] = 0;
  fill(g_window, kGetArea, g_rank, 0x6e7);
  lci::mr_t mr = lci::register_memory(g_window, g_window_size);
  g_rmrs = allgather<lci::rmr_t>(lci::get_rmr(mr), 2);

  // tiny resources: per-thread pools of 24 packets, send queues of 4
  for (int t = 0; t < kThreads; ++t) {
    thread_ctx_t& c = g_ctx[t];
    c.t = t;
    const bool big = std::getenv("SOAK_BIG") != nullptr;  // debugging
    c.pool = lci::alloc_packet_pool_x().npackets(big ? 4096 : 24)();
    c.dev = lci::alloc_device_x()
                .packet_pool(c.pool)
                .net_max_sends(big ? 1024 : 4)
                .net_max_recvs(big ? 256 : 8)();
    c.cq = lci::alloc_cq();
    c.handler = lci::alloc_handler(&local_handler);
    c.counter = lci::alloc_counter();
    c.rcomp_obj = t == 0 ? lci::alloc_cq() : lci::alloc_handler(&rcomp_handler);
    g_rcomp[t] = lci::register_rcomp(c.rcomp_obj);
    c.rng.seed(mix(g_opt.seed ^ (uint64_t(g_rank) << 20) ^ t));
    size_t n = g_nranks;
    c.sr_sent.assign(n, 0);
    c.sr_recv_posted.assign(n, 0);
    c.sr_recv_done.assign(n, 0);
    c.sr_final.assign(n, UINT64_MAX);
    c.sr_prefix.assign(n, 0);
    c.sr_done.assign(n, {});
    c.am_sent.assign(n, 0);
    c.putsig_sent.assign(n, 0);
    c.getsig_sent.assign(n, 0);
    c.sig_bump.assign(n, 0);
    c.am_got.assign(n, 0);
    c.putsig_got.assign(n, 0);
    c.getsig_got.assign(n, 0);
    c.seen.assign(n * 3, {});
    c.fin_got.assign(n, false);
    c.fins.assign(n, fin_t{});
    c.put_busy.assign(n, false);
    c.put_last_tag.assign(n, 0);
    c.put_last_size.assign(n, 0);
    c.nput.assign(n, 0);
  }
  g_eager = lci::get_max_bcopy_size_x().packet_pool(g_ctx[0].pool)();
  // Settle the devices (their receives posted) and count, before the
  // barrier: once this rank has left it, a peer's threads may already be
  // sending, and a poll from this (main) thread would run thread 1's remote
  // completion handler here, without its thread context (it crashed about
  // 1 run in 10, release builds), and count packets in flight as leaks.
  for (int t = 0; t < kThreads; ++t) lci::progress_x().device(g_ctx[t].dev)();
  lci::introspect::counts_t before[kThreads];
  for (int t = 0; t < kThreads; ++t)
    before[t] = lci::introspect::get_counts(lci::runtime_t(), g_ctx[t].dev,
                                            g_ctx[t].pool);
  allgather<int>(0, 3);

  auto start = std::chrono::steady_clock::now();
  auto deadline =
      start + std::chrono::milliseconds(int64_t(g_opt.seconds * 1000));
  auto hard = deadline + std::chrono::seconds(30);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(worker, t, deadline, hard);
  // every rank's workers finished (each keeps its device progressed until
  // then); the main thread polls only the default device meanwhile
  // and samples this process once a second while the workers post
  std::vector<sample_t> samples;
  auto next_sample = start;
  while (g_workers_finished.load() < kThreads) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_sample && now < deadline) {
      samples.push_back(
          take_sample(std::chrono::duration<double>(now - start).count()));
      next_sample += std::chrono::seconds(1);
    }
  }
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  allgather<int>(0, 5);
  g_all_finished.store(true);
  for (auto& th : threads) th.join();

  // the plain puts: the last one into each slot is there, once its sender
  // has seen it complete (every rank's workers have, after the allgather);
  // a put need not land before a later send on the same pair.
  for (int t = 0; t < kThreads; ++t)
    for (int p = 0; p < g_nranks; ++p) {
      if (p == g_rank) continue;
      const fin_t& f = g_ctx[t].fins[p];
      if (f.nput == 0) continue;
      CHECK(check(g_window + put_slot_off(p, t), f.put_last_size, p,
                  f.put_last_tag),
            "last put from rank %d thread %d", p, t);
      g_tot.messages++;
      g_tot.bytes += f.put_last_size;
    }
  // exactly once: every sequence number 0..n-1 seen (no duplicate was
  // accepted on the way)
  for (int t = 0; t < kThreads; ++t) {
    thread_ctx_t& c = g_ctx[t];
    CHECK(c.handler_signals == c.handler_expected,
          "handler signalled %" PRIu64 " times, expected %" PRIu64,
          c.handler_signals, c.handler_expected);
    CHECK(lci::counter_get(c.counter) == c.counter_expected,
          "counter %" PRId64 ", expected %" PRId64, lci::counter_get(c.counter),
          c.counter_expected);
    for (int p = 0; p < g_nranks; ++p) {
      if (p == g_rank) continue;
      uint64_t want[3] = {c.fins[p].am, c.fins[p].putsig, c.fins[p].getsig};
      for (int k = 0; k < 3; ++k)
        for (uint64_t s = 0; s < want[k]; ++s)
          CHECK(s < c.seen[p * 3 + k].size() && c.seen[p * 3 + k][s] == 1,
                "kind %d seq %" PRIu64 " from rank %d never arrived", k, s, p);
    }
  }

  // everyone is done before anything is counted or freed
  allgather<int>(0, 4);
  for (int i = 0; i < 10; ++i)
    for (int t = 0; t < kThreads; ++t) lci::progress_x().device(g_ctx[t].dev)();
  size_t leaks = 0;
  for (int t = 0; t < kThreads; ++t) {
    thread_ctx_t& c = g_ctx[t];
    lci::wait_drained_x().device(c.dev)();
    CHECK(lci::cq_pop(c.cq).is_retry(), "cq not empty at the end");
    if (t == 0)
      CHECK(lci::cq_pop(c.rcomp_obj).is_retry(), "remote cq not empty");
    auto a = lci::introspect::get_counts(lci::runtime_t(), c.dev, c.pool);
    const auto& b = before[t];
    if (std::getenv("SOAK_VERBOSE"))
      std::fprintf(stderr,
                   "rank %d thread %d: %" PRIu64
                   " packets taken back from unexpected messages\n",
                   g_rank, t, a.held_released);
    bool ok = a.pool_free + size_t(a.recvs_posted) == a.pool_npackets &&
              a.recvs_posted == b.recvs_posted && a.sends_pending == 0 &&
              a.ops_pending == 0 && a.backlog == 0 &&
              a.me_entries == b.me_entries && a.user_mrs == b.user_mrs &&
              a.net_registrations == b.net_registrations &&
              a.rdv_ctxs == b.rdv_ctxs;
    if (!ok) {
      ++leaks;
      std::fprintf(stderr,
                   "rank %d thread %d: LEAK\n  before: %s\n  after:  %s\n",
                   g_rank, t, str(b).c_str(), str(a).c_str());
    }
  }
  CHECK(leaks == 0, "%zu leaks", leaks);
  report_samples(samples);
  uint64_t mine[5] = {g_tot.messages, g_tot.bytes, g_tot.retries, g_tot.backlog,
                      g_tot.completions};
  struct five_t {
    uint64_t v[5];
  } f;
  std::memcpy(f.v, mine, sizeof mine);
  auto all = allgather<five_t>(f, 5);
  if (g_rank == 0) {
    uint64_t sum[5] = {};
    for (auto& x : all)
      for (int i = 0; i < 5; ++i) sum[i] += x.v[i];
    std::printf("mp_soak: seed %" PRIu64 " %.1f s: messages checked %" PRIu64
                ", bytes checked %" PRIu64 ", retries %" PRIu64
                ", backlog posts %" PRIu64 ", completions %" PRIu64
                ", leaks 0\n",
                g_opt.seed, secs, sum[0], sum[1], sum[2], sum[3], sum[4]);
    std::printf("mp_soak: rank 0 posts:");
    for (int k = 0; k < 6; ++k)
      std::printf(" %s %" PRIu64, kKindNames[k], g_tot.posts[k].load());
    std::printf("; completions by type:");
    for (int k = 0; k < c_nkinds; ++k)
      std::printf(" %s %" PRIu64, kCompNames[k], g_tot.comps[k].load());
    std::printf("\n");
  }
  std::fflush(stdout);

  for (int t = 0; t < kThreads; ++t) {
    thread_ctx_t& c = g_ctx[t];
    lci::deregister_rcomp(g_rcomp[t]);
    lci::free_comp(&c.rcomp_obj);
    lci::free_comp(&c.cq);
    lci::free_comp(&c.handler);
    lci::free_comp(&c.counter);
  }
  allgather<int>(0, 6);
  for (int t = 0; t < kThreads; ++t) {
    lci::free_device(&g_ctx[t].dev);
    lci::free_packet_pool(&g_ctx[t].pool);
  }
  lci::deregister_memory(&mr);
  std::free(g_window);
  lci::free_matching_engine(&g_coll_me);
  lci::g_runtime_fina();
  return g_failures.load() == 0 ? 0 : 1;
}
