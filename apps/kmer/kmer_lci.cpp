// k-mer counting on LCI (the LCI paper, Section 5.3): every thread parses
// its share of the reads, aggregates the k-mers per owner rank and sends
// each full buffer as an active message; every thread also makes progress
// on its own device and serves the incoming buffers from the shared
// completion queue. Within a rank every k-mer has one owner thread (a
// hash, as the owner rank), which alone inserts it into its own Bloom
// filter (pass 1) or counting table (pass 2), with plain loads and stores;
// a thread that meets a k-mer of another thread of its rank (its own
// reads' or an incoming buffer's) hands it over in a batch through that
// thread's inbox. The algorithm and the options are those of
// kmer_common.hpp; kmer_mpi.cpp is the MPI reference.
//
//   lcrun -n 2 ./kmer -k 31 -t 2 --histo reads.histo reads.fq.gz
//
// The end of a pass: when the last thread of a rank has sent its buffers,
// it tells every other rank how many data messages it sent there (a "done"
// message); a rank's threads keep serving until every rank's done message
// arrived and that many data messages were processed, and until their own
// sends completed; then, once every thread of the rank got that far and
// handed over its last batches, until their inboxes are empty. A barrier
// then separates the passes.
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <lci.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kmer_common.hpp"

namespace
{
using namespace kmer;

constexpr lci::tag_t kDataTag = 1;
constexpr lci::tag_t kDoneTag = 2;
// empty polls at the end of a pass before a thread yields its core
constexpr int kIdlePolls = 64;
// bytes of a batch handed to another thread of the rank
constexpr size_t kBatchBytes = 16 << 10;

void sum_u64(const void* left, const void* right, void* dst, size_t n)
{
  auto* l = static_cast<const uint64_t*>(left);
  auto* r = static_cast<const uint64_t*>(right);
  auto* d = static_cast<uint64_t*>(dst);
  for (size_t i = 0; i < n; ++i) d[i] = l[i] + r[i];
}

void min_u64(const void* left, const void* right, void* dst, size_t n)
{
  auto* l = static_cast<const uint64_t*>(left);
  auto* r = static_cast<const uint64_t*>(right);
  auto* d = static_cast<uint64_t*>(dst);
  for (size_t i = 0; i < n; ++i) d[i] = l[i] < r[i] ? l[i] : r[i];
}

// An error that leaves the ranks unable to agree (the library failed in
// the middle of a pass): report and end this process; the launcher ends
// the others.
[[noreturn]] void die(int rank, const std::string& what)
{
  std::fprintf(stderr, "kmer: rank %d: %s\n", rank, what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

// Batches handed to one thread by the others: in pass 1 the k-mers'
// hashes (all the Bloom filter needs), in pass 2 the k-mers to count and
// their hashes (three words each).
struct alignas(64) inbox_t {
  std::mutex mutex;
  std::vector<std::pair<uint8_t*, size_t>> batches;
};

struct app_t {
  options_t opt;
  int rank = 0, nranks = 1, bpk = 8;
  size_t cap = 0;  // bytes of k-mers in one aggregation buffer
  lci::comp_t rcq, shandler;
  lci::rcomp_t rcomp;
  std::vector<lci::device_t> devices;
  std::vector<std::unique_ptr<owner_t>> owners;  // one per thread
  std::unique_ptr<inbox_t[]> inboxes;            // one per thread
  progress_t progress;

  // read phase
  std::vector<std::string> seqs;
  std::mutex mutex;
  uint64_t stats[3] = {0, 0, 0};  // reads, bases, k-mers
  uint64_t error_key = UINT64_MAX;
  std::string error_msg;

  // the pass in progress
  int pass = 0;
  std::atomic<size_t> next{0};
  std::atomic<int> finished{0};
  std::unique_ptr<std::atomic<uint64_t>[]> sent_to;
  std::atomic<uint64_t> expected{0}, processed{0};
  std::atomic<int> dones{0};
  std::atomic<int> settled{0};  // threads that handed over their last batch
  std::atomic<uint64_t> fresh{0};

  void start_pass(int p)
  {
    pass = p;
    next = 0;
    finished = 0;
    for (int r = 0; r < nranks; ++r) sent_to[r] = 0;
    expected = 0;
    processed = 0;
    dones = 0;
    settled = 0;
  }
};

app_t* g_app = nullptr;

void send_done(lci::status_t s)
{
  std::free(s.buffer);
  static_cast<std::atomic<int64_t>*>(s.user_context)
      ->fetch_sub(1, std::memory_order_release);
}

class worker_t
{
 public:
  worker_t(app_t& a, int tid)
      : a_(a), tid_(tid), dev_(a.devices[tid]), owner_(*a.owners[tid])
  {
  }

  void run()
  {
    const int n = a_.nranks;
    buf_.assign(n, nullptr);
    fill_.assign(n, 0);
    sent_.assign(n, 0);
    for (int r = 0; r < n; ++r)
      if (r != a_.rank) buf_[r] = static_cast<uint8_t*>(alloc(a_.cap));
    const int nt = a_.opt.threads;
    lbuf_.assign(nt, nullptr);
    lfill_.assign(nt, 0);
    for (int t = 0; t < nt; ++t)
      if (t != tid_) lbuf_[t] = static_cast<uint8_t*>(alloc(kBatchBytes));
    const bool report = a_.rank == 0 && tid_ == 0;
    const size_t nchunks = a_.seqs.size();
    size_t c;
    while ((c = a_.next.fetch_add(1)) < nchunks) {
      for_each_kmer(a_.seqs[c], a_.opt.k, [&](u128 v) { route(v); });
      serve(8);
      if (report) a_.progress.tick(c + 1, nchunks, "chunks");
    }
    for (int r = 0; r < n; ++r) flush(r);
    for (int r = 0; r < n; ++r) a_.sent_to[r] += sent_[r];
    if (a_.finished.fetch_add(1) + 1 == a_.opt.threads) {
      // this rank has sent everything: say how much to every other rank
      for (int r = 0; r < n; ++r) {
        if (r == a_.rank) continue;
        auto* m = static_cast<uint64_t*>(alloc(sizeof(uint64_t)));
        *m = a_.sent_to[r].load();
        if (!post(r, m, sizeof(*m), kDoneTag)) std::free(m);
      }
    }
    // Waiting for the other ranks' last buffers: a thread that finds
    // nothing for a while gives its core away, so that on a machine with
    // more processes than cores the ranks still producing get it.
    int idle = 0;
    while (a_.dones.load() != n - 1 ||
           a_.processed.load() != a_.expected.load() ||
           outstanding_.load(std::memory_order_acquire) != 0) {
      wait_step(serve(16), &idle);
    }
    // Every incoming buffer is now handled, but the other threads may
    // still hold batches of this thread's k-mers: hand over ours, then
    // serve the inbox until every thread has handed over its last batch.
    for (int t = 0; t < nt; ++t) hand_over(t);
    a_.settled.fetch_add(1, std::memory_order_release);
    for (;;) {
      const bool all = a_.settled.load(std::memory_order_acquire) == nt;
      int got = serve(16);
      if (all && got == 0) break;
      wait_step(got, &idle);
    }
    for (int r = 0; r < n; ++r) std::free(buf_[r]);
    for (int t = 0; t < nt; ++t) std::free(lbuf_[t]);
    a_.fresh += fresh_;
  }

 private:
  static void* alloc(size_t n)
  {
    void* p = std::malloc(n);
    if (!p) die(g_app->rank, "out of memory");
    return p;
  }

  // Waiting: a thread that finds nothing for a while gives its core away.
  static void wait_step(int handled, int* idle)
  {
    if (handled != 0)
      *idle = 0;
    else if (++*idle >= kIdlePolls)
      std::this_thread::yield();
  }

  // A k-mer of this rank: inserted if this thread owns it, else added to
  // the batch for its owner thread. Inlined: it runs for every k-mer.
  [[gnu::always_inline]] void own(u128 v, uint64_t h)
  {
    int t = owner_thread(h, a_.rank, a_.nranks, a_.opt.threads);
    if (a_.pass == 1) {
      if (t == tid_)
        fresh_ += owner_.insert_bloom(h);
      else
        add_entry(t, &h, sizeof(h));
      return;
    }
    // In pass 2 the Bloom filters are read-only (pass 1's threads were
    // joined), so the owner's second layer is asked here and only the
    // k-mers to count travel.
    const owner_t& o = *a_.owners[t];
    if (o.use_bloom && !o.layer2.contains(h)) return;
    if (t == tid_) {
      owner_.table.add(v, h);
      return;
    }
    const uint64_t e[3] = {static_cast<uint64_t>(v),
                           static_cast<uint64_t>(v >> 64), h};
    add_entry(t, e, sizeof(e));
  }

  [[gnu::always_inline]] void add_entry(int t, const void* e, size_t size)
  {
    std::memcpy(lbuf_[t] + lfill_[t], e, size);
    lfill_[t] += size;
    if (lfill_[t] + size > kBatchBytes) hand_over(t);
  }

  void hand_over(int t)
  {
    if (lfill_[t] == 0) return;
    inbox_t& in = a_.inboxes[t];
    {
      std::lock_guard<std::mutex> g(in.mutex);
      in.batches.emplace_back(lbuf_[t], lfill_[t]);
    }
    lbuf_[t] = static_cast<uint8_t*>(alloc(kBatchBytes));
    lfill_[t] = 0;
  }

  // Inserts the batches other threads handed over; returns how many.
  int drain_inbox()
  {
    inbox_t& in = a_.inboxes[tid_];
    {
      std::lock_guard<std::mutex> g(in.mutex);
      if (in.batches.empty()) return 0;
      taken_.swap(in.batches);
    }
    for (auto& b : taken_) {
      if (a_.pass == 1) {
        for (size_t i = 0; i < b.second; i += sizeof(uint64_t)) {
          uint64_t h;
          std::memcpy(&h, b.first + i, sizeof(h));
          fresh_ += owner_.insert_bloom(h);
        }
      } else {
        for (size_t i = 0; i < b.second; i += 3 * sizeof(uint64_t)) {
          uint64_t e[3];
          std::memcpy(e, b.first + i, sizeof(e));
          owner_.table.add((u128(e[1]) << 64) | e[0], e[2]);
        }
      }
      std::free(b.first);
    }
    int got = static_cast<int>(taken_.size());
    taken_.clear();
    return got;
  }

  void route(u128 v)
  {
    uint64_t h = hash_kmer(v);
    int o = owner_of(h, a_.nranks);
    if (o == a_.rank) {
      own(v, h);
      return;
    }
    put_kmer(buf_[o] + fill_[o], v, a_.bpk);
    fill_[o] += a_.bpk;
    if (fill_[o] + a_.bpk > a_.cap) flush(o);
  }

  // Posts an active message; true if it is posted (the buffer is the
  // library's until send_done), false if done (the buffer is free again).
  bool post(int dest, void* p, size_t size, lci::tag_t tag)
  {
    for (;;) {
      outstanding_.fetch_add(1, std::memory_order_relaxed);
      lci::status_t s = lci::post_am_x(dest, p, size, a_.shandler, a_.rcomp)
                            .tag(tag)
                            .device(dev_)
                            .user_context(&outstanding_)();
      if (s.is_posted()) return true;
      outstanding_.fetch_sub(1, std::memory_order_relaxed);
      if (s.is_done()) return false;
      if (!s.is_retry())
        die(a_.rank, std::string("post_am failed: ") + s.error.get_str());
      serve(4);  // retry: let the network drain, and drain it ourselves
    }
  }

  void flush(int dest)
  {
    if (fill_[dest] == 0) return;
    if (post(dest, buf_[dest], fill_[dest], kDataTag))
      buf_[dest] = static_cast<uint8_t*>(alloc(a_.cap));
    fill_[dest] = 0;
    ++sent_[dest];
    serve(2);
  }

  void handle(const lci::status_t& s)
  {
    auto* p = static_cast<uint8_t*>(s.buffer);
    if (s.tag == kDoneTag && s.size == sizeof(uint64_t)) {
      uint64_t n;
      std::memcpy(&n, p, sizeof(n));
      lci::get_allocator()->deallocate(p);
      a_.expected.fetch_add(n);
      a_.dones.fetch_add(1);
      return;
    }
    if (s.tag != kDataTag || s.size % a_.bpk != 0)
      die(a_.rank, "unexpected message of " + std::to_string(s.size) +
                       " bytes with tag " + std::to_string(s.tag) +
                       " from rank " + std::to_string(s.rank));
    const size_t nk = s.size / a_.bpk;
    for (size_t i = 0; i < nk; ++i) {
      u128 v = get_kmer(p + i * a_.bpk, a_.bpk);
      uint64_t h = hash_kmer(v);
      // own() indexes this rank's threads by the hash: a k-mer of another
      // rank would index past them
      if (owner_of(h, a_.nranks) != a_.rank)
        die(a_.rank, "received a k-mer of rank " +
                         std::to_string(owner_of(h, a_.nranks)) +
                         " from rank " + std::to_string(s.rank));
      own(v, h);
    }
    // an active message's buffer goes back to the runtime's allocator
    lci::get_allocator()->deallocate(p);
    a_.processed.fetch_add(1);
  }

  // Progresses this thread's device and handles up to `max` incoming
  // buffers. Thread 0 also progresses the default device, where the
  // barrier between the passes runs: a rank that has left that barrier may
  // still have its last barrier message to a peer queued there (a tcp send
  // the socket did not take at once), and that peer stays in the barrier
  // until someone here progresses it, while this rank's workers wait for
  // the peer's data.
  // Then it inserts the batches in its inbox. Returns the number of
  // buffers and batches handled.
  int serve(int max)
  {
    lci::error_t e = lci::progress_x().device(dev_)();
    if (tid_ == 0) e = lci::progress();
    (void)e;
    int i = 0;
    for (; i < max; ++i) {
      lci::status_t s = lci::cq_pop(a_.rcq);
      if (!s.is_done()) break;
      handle(s);
    }
    return i + drain_inbox();
  }

  app_t& a_;
  int tid_;
  lci::device_t dev_;
  owner_t& owner_;
  std::vector<uint8_t*> buf_;  // aggregation buffer per rank
  std::vector<size_t> fill_;
  std::vector<uint8_t*> lbuf_;  // batch per thread of this rank
  std::vector<size_t> lfill_;
  std::vector<std::pair<uint8_t*, size_t>> taken_;  // from the inbox
  std::vector<uint64_t> sent_;
  std::atomic<int64_t> outstanding_{0};
  uint64_t fresh_ = 0;
};

template <typename F>
void run_threads(int n, F&& f)
{
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&f, t] {
      try {
        f(t);
      } catch (const std::exception& e) {
        die(g_app->rank, e.what());
      }
    });
  for (auto& th : threads) th.join();
}

void read_phase(app_t& a)
{
  reader_t reader(a.opt.files, a.opt.chunk_bytes, a.rank, a.nranks);
  std::atomic<bool> failed{false};
  if (a.rank == 0) a.progress.start("read", a.opt.progress_secs);
  run_threads(a.opt.threads, [&](int tid) {
    chunk_t c;
    try {
      while (!failed.load() && reader.next(&c)) {
        parsed_t p;
        parse_chunk(c, a.opt.files[c.file], a.opt, &p);
        std::lock_guard<std::mutex> g(a.mutex);
        a.seqs.push_back(std::move(p.seq));
        a.stats[0] += p.reads;
        a.stats[1] += p.bases;
        a.stats[2] += p.kmers;
        if (a.rank == 0 && tid == 0)
          a.progress.tick(reader.bytes_read() >> 20, 0, "MiB read");
      }
    } catch (const input_error& e) {
      failed = true;
      uint64_t key = (uint64_t(e.file_index) << 40) | e.line;
      std::lock_guard<std::mutex> g(a.mutex);
      if (key < a.error_key) {
        a.error_key = key;
        a.error_msg = e.what();
      }
    }
  });
}

void count_pass(app_t& a, int pass)
{
  a.start_pass(pass);
  if (a.rank == 0)
    a.progress.start(pass == 1 ? "bloom" : "count", a.opt.progress_secs);
  run_threads(a.opt.threads, [&](int tid) { worker_t(a, tid).run(); });
  lci::barrier();
}

void write_output(app_t& a, uint64_t lowest)
{
  // the ranks append their k-mers in turn
  for (int r = 0; r < a.nranks; ++r) {
    if (r == a.rank) {
      for (size_t t = 0; t < a.owners.size(); ++t) {
        std::string err = write_kmers(a.opt.output_path, r == 0 && t == 0,
                                      a.owners[t]->table, a.opt.k, lowest);
        if (!err.empty()) die(a.rank, err);
      }
    }
    lci::barrier();
  }
}

int run(app_t& a)
{
  std::vector<std::pair<const char*, double>> phases;
  double t = now_secs();
  auto lap = [&](const char* name) {
    double n = now_secs();
    phases.emplace_back(name, n - t);
    t = n;
  };

  read_phase(a);
  // agree on the input: the first error in input order wins, reported by
  // the lowest rank that found it; every rank exits with an error
  uint64_t key = a.error_key;
  lci::allreduce(&key, &key, 1, sizeof(key), min_u64);
  if (key != UINT64_MAX) {
    uint64_t me = a.error_key == key ? uint64_t(a.rank) : UINT64_MAX;
    lci::allreduce(&me, &me, 1, sizeof(me), min_u64);
    if (me == uint64_t(a.rank))
      std::fprintf(stderr, "kmer: %s\n", a.error_msg.c_str());
    else
      std::fprintf(stderr,
                   "kmer: rank %d: stopping: input error reported by rank "
                   "%" PRIu64 "\n",
                   a.rank, me);
    return 1;
  }
  uint64_t stats[3] = {a.stats[0], a.stats[1], a.stats[2]};
  lci::allreduce(stats, stats, 3, sizeof(uint64_t), sum_u64);
  lap("read");

  // each thread owns 1/threads of the rank's k-mers
  for (int t = 0; t < a.opt.threads; ++t) {
    a.owners.emplace_back(new owner_t);
    a.owners.back()->init(
        a.opt.bloom,
        uint64_t(a.opt.bloom_bits * stats[2] / a.nranks / a.opt.threads) + 1);
  }
  if (a.opt.bloom) {
    count_pass(a, 1);
    lap("bloom");
  }
  count_pass(a, 2);
  lap("count");

  const uint64_t lowest = a.opt.bloom ? 2 : 1;
  std::vector<uint64_t> all(a.opt.max_count + 3, 0);  // fresh, distinct, hist
  all[0] = a.fresh.load();
  for (auto& o : a.owners)
    o->table.for_each([&](u128, uint64_t c) {
      if (c < lowest) return;
      ++all[1];
      ++all[2 + (c < a.opt.max_count ? c : a.opt.max_count)];
    });
  lci::allreduce(all.data(), all.data(), all.size(), sizeof(uint64_t), sum_u64);
  lap("histo");
  std::vector<uint64_t> hist(all.begin() + 2, all.end());

  if (!a.opt.output_path.empty()) write_output(a, lowest);
  if (a.rank != 0) return 0;
  summary_t s{"lci",    a.nranks, a.opt.threads, stats[0], stats[1],
              stats[2], all[0],   all[1],        phases,   ""};
  size_t eager = lci::get_max_bcopy_size();
  s.note = "lci: a full buffer (" + std::to_string(a.cap) + " B) travels " +
           (a.cap <= eager ? "eager" : "by rendezvous") + "; eager up to " +
           std::to_string(eager) + " B";
  return finish_output("kmer", a.opt, s, hist, lowest);
}

}  // namespace

int main(int argc, char** argv)
{
  app_t a;
  g_app = &a;
  std::string perr = parse_options(argc, argv, true, &a.opt);
  try {
    // An aggregation buffer up to 32 KiB travels in one packet (eager) when
    // the packets are made that large; the pool keeps the default's bytes.
    size_t packet = a.opt.packet_size;
    if (perr.empty() && packet == 0) {
      size_t need = (a.opt.agg_bytes + 256 + 1023) / 1024 * 1024;
      if (need > 8192 && a.opt.agg_bytes <= (32u << 10)) packet = need;
    }
    if (packet)
      lci::g_runtime_init_x().packet_size(packet).npackets(
          std::max<size_t>(1024, (size_t(32) << 20) / packet))();
    else
      lci::g_runtime_init();
    a.rank = lci::get_rank_me();
    a.nranks = lci::get_rank_n();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kmer: %s\n", e.what());
    return 1;
  }
  if (!perr.empty()) {
    int code = 0;
    if (a.rank == 0) {
      if (perr == "help") {
        std::printf("%s", usage(argv[0], true).c_str());
      } else {
        std::fprintf(stderr,
                     "kmer: %s\nusage: %s -k K [options] FILE... (--help: "
                     "the options)\n",
                     perr.c_str(), argv[0]);
      }
    }
    if (perr != "help") code = 2;
    lci::g_runtime_fina();
    return code;
  }
  int rc = 1;
  try {
    a.bpk = wire_bytes(a.opt.k);
    a.cap = a.opt.agg_bytes / a.bpk * a.bpk;
    a.inboxes.reset(new inbox_t[a.opt.threads]);
    a.sent_to.reset(new std::atomic<uint64_t>[a.nranks]);
    a.shandler = lci::alloc_handler(send_done);
    a.rcq = lci::alloc_cq();
    a.rcomp = lci::register_rcomp(a.rcq);
    // devices are allocated collectively, in the same order on every rank
    for (int t = 0; t < a.opt.threads; ++t)
      a.devices.push_back(lci::alloc_device());
    rc = run(a);
    for (auto& d : a.devices) lci::free_device(&d);
    lci::deregister_rcomp(a.rcomp);
    lci::free_comp(&a.rcq);
    lci::free_comp(&a.shandler);
    lci::g_runtime_fina();
  } catch (const std::exception& e) {
    die(a.rank, e.what());
  }
  return rc;
}
