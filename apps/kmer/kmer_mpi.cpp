// The MPI reference of the k-mer counting application: the algorithm,
// input and output of kmer_lci.cpp (kmer_common.hpp), one thread per
// process. Aggregation buffers travel as nonblocking point-to-point
// messages (MPI_Isend), received into pre-posted MPI_Irecv from any source;
// the end of a pass is detected the same way as in the LCI program (each
// rank sends every other rank the number of data messages it sent there).
//
//   mpiexec -n 2 ./kmer_mpi -k 31 --histo reads.histo reads.fq.gz
#include <mpi.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "kmer_common.hpp"

namespace
{
using namespace kmer;

constexpr int kDataTag = 1;
constexpr int kDoneTag = 2;
constexpr int kRecvs = 8;            // data receives kept posted
constexpr size_t kMaxInFlight = 64;  // data sends before waiting for one

[[noreturn]] void die(int rank, const std::string& what)
{
  std::fprintf(stderr, "kmer_mpi: rank %d: %s\n", rank, what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

struct app_t {
  options_t opt;
  int rank = 0, nranks = 1, bpk = 8;
  size_t cap = 0;
  owner_t owner;
  progress_t progress;
  std::vector<std::string> seqs;
  uint64_t stats[3] = {0, 0, 0};
  uint64_t fresh = 0;
};

class pass_t
{
 public:
  pass_t(app_t& a, int pass) : a_(a), pass_(pass) {}

  void run()
  {
    const int n = a_.nranks;
    buf_.assign(n, std::vector<uint8_t>());
    fill_.assign(n, 0);
    sent_.assign(n, 0);
    for (int r = 0; r < n; ++r)
      if (r != a_.rank) buf_[r].resize(a_.cap);
    recv_buf_.assign(kRecvs, std::vector<uint8_t>(a_.cap));
    recv_req_.assign(kRecvs, MPI_REQUEST_NULL);
    if (n > 1) {
      for (int i = 0; i < kRecvs; ++i) post_recv(i);
      MPI_Irecv(&done_in_, 1, MPI_UINT64_T, MPI_ANY_SOURCE, kDoneTag,
                MPI_COMM_WORLD, &done_req_);
    }

    const bool report = a_.rank == 0;
    const size_t nchunks = a_.seqs.size();
    for (size_t c = 0; c < nchunks; ++c) {
      for_each_kmer(a_.seqs[c], a_.opt.k, [&](u128 v) { route(v); });
      serve();
      if (report) a_.progress.tick(c + 1, nchunks, "chunks");
    }
    for (int r = 0; r < n; ++r) flush(r);
    std::vector<uint64_t> counts(sent_);
    std::vector<MPI_Request> done_out;
    for (int r = 0; r < n; ++r) {
      if (r == a_.rank) continue;
      done_out.emplace_back();
      MPI_Isend(&counts[r], 1, MPI_UINT64_T, r, kDoneTag, MPI_COMM_WORLD,
                &done_out.back());
    }
    for (;;) {
      serve();
      reap_sends();
      int flag = 0;
      MPI_Testall(static_cast<int>(done_out.size()), done_out.data(), &flag,
                  MPI_STATUSES_IGNORE);
      if (flag && dones_ == n - 1 && processed_ == expected_ &&
          in_flight_.empty())
        break;
    }
    for (auto& r : recv_req_) {
      if (r == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    if (done_req_ != MPI_REQUEST_NULL) {
      MPI_Cancel(&done_req_);
      MPI_Wait(&done_req_, MPI_STATUS_IGNORE);
    }
    a_.fresh += fresh_;
  }

 private:
  struct send_t {
    MPI_Request req;
    std::vector<uint8_t> buf;
  };

  void post_recv(int i)
  {
    MPI_Irecv(recv_buf_[i].data(), static_cast<int>(a_.cap), MPI_BYTE,
              MPI_ANY_SOURCE, kDataTag, MPI_COMM_WORLD, &recv_req_[i]);
  }

  void route(u128 v)
  {
    uint64_t h = hash_kmer(v);
    int o = owner_of(h, a_.nranks);
    if (o == a_.rank) {
      if (pass_ == 1)
        fresh_ += a_.owner.insert_bloom(h);
      else
        a_.owner.insert_count(v, h);
      return;
    }
    put_kmer(buf_[o].data() + fill_[o], v, a_.bpk);
    fill_[o] += a_.bpk;
    if (fill_[o] + a_.bpk > a_.cap) flush(o);
  }

  void flush(int dest)
  {
    if (fill_[dest] == 0) return;
    while (in_flight_.size() >= kMaxInFlight) {
      serve();
      reap_sends();
    }
    send_t s;
    if (!spare_.empty()) {
      s.buf.swap(spare_.back());
      spare_.pop_back();
    }
    s.buf.resize(a_.cap);
    s.buf.swap(buf_[dest]);
    MPI_Isend(s.buf.data(), static_cast<int>(fill_[dest]), MPI_BYTE, dest,
              kDataTag, MPI_COMM_WORLD, &s.req);
    in_flight_.push_back(std::move(s));
    fill_[dest] = 0;
    ++sent_[dest];
    serve();
  }

  // completed sends give their buffers back
  void reap_sends()
  {
    size_t j = 0;
    for (size_t i = 0; i < in_flight_.size(); ++i) {
      int flag = 0;
      MPI_Test(&in_flight_[i].req, &flag, MPI_STATUS_IGNORE);
      if (flag) {
        spare_.push_back(std::move(in_flight_[i].buf));
      } else {
        if (i != j) in_flight_[j] = std::move(in_flight_[i]);
        ++j;
      }
    }
    in_flight_.resize(j);
  }

  void serve()
  {
    if (a_.nranks == 1) return;
    int idx[kRecvs];
    MPI_Status st[kRecvs];
    int count = 0;
    MPI_Testsome(kRecvs, recv_req_.data(), &count, idx, st);
    for (int i = 0; i < count && count != MPI_UNDEFINED; ++i) {
      int bytes = 0;
      MPI_Get_count(&st[i], MPI_BYTE, &bytes);
      if (bytes % a_.bpk != 0)
        die(a_.rank, "a message of " + std::to_string(bytes) +
                         " bytes from rank " +
                         std::to_string(st[i].MPI_SOURCE));
      fresh_ += a_.owner.process(pass_, recv_buf_[idx[i]].data(),
                                 bytes / a_.bpk, a_.bpk);
      ++processed_;
      post_recv(idx[i]);
    }
    while (done_req_ != MPI_REQUEST_NULL) {
      int flag = 0;
      MPI_Test(&done_req_, &flag, MPI_STATUS_IGNORE);
      if (!flag) break;
      expected_ += done_in_;
      if (++dones_ < a_.nranks - 1)
        MPI_Irecv(&done_in_, 1, MPI_UINT64_T, MPI_ANY_SOURCE, kDoneTag,
                  MPI_COMM_WORLD, &done_req_);
    }
  }

  app_t& a_;
  int pass_;
  std::vector<std::vector<uint8_t>> buf_;
  std::vector<size_t> fill_;
  std::vector<uint64_t> sent_;
  std::vector<send_t> in_flight_;
  std::vector<std::vector<uint8_t>> spare_;
  std::vector<std::vector<uint8_t>> recv_buf_;
  std::vector<MPI_Request> recv_req_;
  MPI_Request done_req_ = MPI_REQUEST_NULL;
  uint64_t done_in_ = 0;
  int dones_ = 0;
  uint64_t expected_ = 0, processed_ = 0;
  uint64_t fresh_ = 0;
};

void count_pass(app_t& a, int pass)
{
  if (a.rank == 0)
    a.progress.start(pass == 1 ? "bloom" : "count", a.opt.progress_secs);
  pass_t(a, pass).run();
  MPI_Barrier(MPI_COMM_WORLD);
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

  // read: the same chunks and checks as the LCI program, one thread
  // a signed key: this system's MPICH compares MPI_UINT64_T as signed in
  // MPI_MIN, so UINT64_MAX would win as "-1"
  int64_t error_key = INT64_MAX;
  std::string error_msg;
  {
    reader_t reader(a.opt.files, a.opt.chunk_bytes, a.rank, a.nranks);
    if (a.rank == 0) a.progress.start("read", a.opt.progress_secs);
    chunk_t c;
    try {
      while (reader.next(&c)) {
        parsed_t p;
        parse_chunk(c, a.opt.files[c.file], a.opt, &p);
        a.seqs.push_back(std::move(p.seq));
        a.stats[0] += p.reads;
        a.stats[1] += p.bases;
        a.stats[2] += p.kmers;
        if (a.rank == 0)
          a.progress.tick(reader.bytes_read() >> 20, 0, "MiB read");
      }
    } catch (const input_error& e) {
      error_key = int64_t((uint64_t(e.file_index) << 40) | e.line);
      error_msg = e.what();
    }
  }
  int64_t key = error_key;
  MPI_Allreduce(MPI_IN_PLACE, &key, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  if (key != INT64_MAX) {
    int me = error_key == key ? a.rank : a.nranks;
    MPI_Allreduce(MPI_IN_PLACE, &me, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (me == a.rank)
      std::fprintf(stderr, "kmer_mpi: %s\n", error_msg.c_str());
    else
      std::fprintf(stderr,
                   "kmer_mpi: rank %d: stopping: input error reported by "
                   "rank %d\n",
                   a.rank, me);
    return 1;
  }
  uint64_t stats[3] = {a.stats[0], a.stats[1], a.stats[2]};
  MPI_Allreduce(MPI_IN_PLACE, stats, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  lap("read");

  a.owner.init(a.opt.bloom,
               uint64_t(a.opt.bloom_bits * stats[2] / a.nranks) + 1);
  if (a.opt.bloom) {
    count_pass(a, 1);
    lap("bloom");
  }
  count_pass(a, 2);
  lap("count");

  const uint64_t lowest = a.opt.bloom ? 2 : 1;
  std::vector<uint64_t> all(a.opt.max_count + 3, 0);
  all[0] = a.fresh;
  a.owner.table.for_each([&](u128, uint64_t c) {
    if (c < lowest) return;
    ++all[1];
    ++all[2 + (c < a.opt.max_count ? c : a.opt.max_count)];
  });
  MPI_Allreduce(MPI_IN_PLACE, all.data(), static_cast<int>(all.size()),
                MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  lap("histo");
  std::vector<uint64_t> hist(all.begin() + 2, all.end());

  if (!a.opt.output_path.empty()) {
    for (int r = 0; r < a.nranks; ++r) {
      if (r == a.rank) {
        std::string err = write_kmers(a.opt.output_path, r == 0, a.owner.table,
                                      a.opt.k, lowest);
        if (!err.empty()) die(a.rank, err);
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  if (a.rank != 0) return 0;
  summary_t s{"mpi",    a.nranks, 1,      stats[0], stats[1],
              stats[2], all[0],   all[1], phases,   ""};
  return finish_output("kmer_mpi", a.opt, s, hist, lowest);
}

}  // namespace

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  app_t a;
  MPI_Comm_rank(MPI_COMM_WORLD, &a.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &a.nranks);
  std::string perr = parse_options(argc, argv, false, &a.opt);
  if (!perr.empty()) {
    if (a.rank == 0) {
      if (perr == "help")
        std::printf("%s", usage(argv[0], false).c_str());
      else
        std::fprintf(stderr,
                     "kmer_mpi: %s\nusage: %s -k K [options] FILE... "
                     "(--help: the options)\n",
                     perr.c_str(), argv[0]);
    }
    MPI_Finalize();
    return perr == "help" ? 0 : 2;
  }
  int rc = 1;
  try {
    a.bpk = wire_bytes(a.opt.k);
    a.cap = a.opt.agg_bytes / a.bpk * a.bpk;
    rc = run(a);
  } catch (const std::exception& e) {
    die(a.rank, e.what());
  }
  MPI_Finalize();
  return rc;
}
