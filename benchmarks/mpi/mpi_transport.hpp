// The MPI twin's side of the benchmark engine (../common/suite.hpp): the
// same pairs and patterns as our programs, written with MPI_Isend /
// MPI_Irecv.
//
// Modes:
//   process (N ranks x 1 thread)      MPI_COMM_WORLD, MPI_THREAD_SINGLE
//   --shared-comm (threads)           all threads on MPI_COMM_WORLD under
//                                     MPI_THREAD_MULTIPLE, a tag per thread
//   default with threads              one communicator per thread, made by
//                                     MPI_Comm_dup_with_info with the hints
//                                     mpi_assert_no_any_tag and
//                                     mpi_assert_allow_overtaking (MPICH maps
//                                     communicators to VCIs; set
//                                     MPIR_CVAR_CH4_NUM_VCIS to use several)
// In loopback thread pairs (--pairs) a thread sends on its peer's
// communicator and receives on its own, as our threads do with devices.
//
// Operations (--op): sendrecv (an MPI_Irecv per expected message from the
// peer, then MPI_Waitall), am (active-message style: each thread keeps
// --window receives pre-posted from MPI_ANY_SOURCE on its tag, completes
// them with MPI_Waitany and posts each again at once). As in the OSU
// benchmarks, the receives of a window share one buffer.
#ifndef LCI_BENCHMARKS_MPI_MPI_TRANSPORT_HPP
#define LCI_BENCHMARKS_MPI_MPI_TRANSPORT_HPP

#include <mpi.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../common/suite.hpp"
#include "mpi_world.hpp"

namespace bench
{

class mpi_transport_t
{
 public:
  class channel_t
  {
   public:
    channel_t(bool am, MPI_Comm recv_comm, MPI_Comm send_comm, int peer,
              int send_tag, int recv_tag, long ring, size_t max_size)
        : am_(am),
          recv_comm_(recv_comm),
          send_comm_(send_comm),
          peer_(peer),
          send_tag_(send_tag),
          recv_tag_(recv_tag),
          max_size_(max_size),
          sbuf_(max_size, 's'),
          rbuf_(max_size, 'r')
    {
      if (!am_) return;
      ring_.resize(static_cast<size_t>(ring));
      for (auto& r : ring_) post_ring(&r);
    }
    ~channel_t()
    {
      // after quiesce(): nothing can match these any more
      for (auto& r : ring_) MPI_Cancel(&r);
      if (!ring_.empty())
        MPI_Waitall(static_cast<int>(ring_.size()), ring_.data(),
                    MPI_STATUSES_IGNORE);
    }
    channel_t(const channel_t&) = delete;
    channel_t& operator=(const channel_t&) = delete;

    void post_recvs(long n, size_t size)
    {
      if (am_) return;  // the ring is always posted
      reqs_.resize(static_cast<size_t>(n));
      for (auto& r : reqs_)
        MPI_Irecv(rbuf_.data(), static_cast<int>(size), MPI_BYTE, peer_,
                  recv_tag_, recv_comm_, &r);
    }

    void wait_recvs(long n)
    {
      if (!am_) {
        MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(),
                    MPI_STATUSES_IGNORE);
        return;
      }
      for (long i = 0; i < n; ++i) {
        int idx = MPI_UNDEFINED;
        MPI_Waitany(static_cast<int>(ring_.size()), ring_.data(), &idx,
                    MPI_STATUS_IGNORE);
        post_ring(&ring_[static_cast<size_t>(idx)]);
      }
    }

    void send_n(long n, size_t size)
    {
      sreqs_.resize(static_cast<size_t>(n));
      for (auto& r : sreqs_)
        MPI_Isend(sbuf_.data(), static_cast<int>(size), MPI_BYTE, peer_,
                  send_tag_, send_comm_, &r);
      MPI_Waitall(static_cast<int>(sreqs_.size()), sreqs_.data(),
                  MPI_STATUSES_IGNORE);
    }

    // MPI progresses on its own inside the calls of the other threads
    void keep_progress() { std::this_thread::yield(); }

   private:
    void post_ring(MPI_Request* r)
    {
      MPI_Irecv(rbuf_.data(), static_cast<int>(max_size_), MPI_BYTE,
                MPI_ANY_SOURCE, recv_tag_, recv_comm_, r);
    }

    bool am_;
    MPI_Comm recv_comm_, send_comm_;
    int peer_, send_tag_, recv_tag_;
    size_t max_size_;
    std::vector<char> sbuf_, rbuf_;
    std::vector<MPI_Request> reqs_, sreqs_, ring_;
  };

  static std::vector<std::string> op_names() { return {"sendrecv", "am"}; }

  // Initializes MPI with the thread level the options need.
  mpi_transport_t(int* argc, char*** argv, const options_t& o)
  {
    const int required =
        o.threads > 1 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(argc, argv, required, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks_);
    if (provided < required) {
      if (rank_ == 0)
        std::fprintf(stderr, "%s: MPI provides thread level %d, %d is needed\n",
                     library(), provided, required);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank_ == 0) {
      char version[MPI_MAX_LIBRARY_VERSION_STRING];
      int len = 0;
      MPI_Get_library_version(version, &len);
      std::string first(version, static_cast<size_t>(len));
      first = first.substr(0, first.find('\n'));
      std::printf("# mpi: %s; thread level %s\n", first.c_str(),
                  required == MPI_THREAD_MULTIPLE ? "multiple" : "single");
    }
  }
  ~mpi_transport_t() { MPI_Finalize(); }

  static const char* library() { return mpi_world_t::library(); }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  std::string thread_mode(bool shared) const
  {
    return shared ? "shared-comm" : "comm-per-thread";
  }
  std::string mode_override() const { return ""; }

  void setup(const options_t& o)
  {
    am_ = o.op == "am";
    const bool process = nranks_ > 1 && o.threads == 1;
    if (process || o.shared) return;  // MPI_COMM_WORLD
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Info_set(info, "mpi_assert_allow_overtaking", "true");
    for (int t = 0; t < o.threads; ++t) {  // same order on every rank
      MPI_Comm c;
      MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
      comms_.push_back(c);
    }
    MPI_Info_free(&info);
  }

  std::unique_ptr<channel_t> make_channel(const options_t& o, const lane_t& l,
                                          size_t max_size)
  {
    MPI_Comm recv_comm = comm_of(l.thread);
    MPI_Comm send_comm =
        nranks_ == 1 && !l.self ? comm_of(l.peer_thread) : recv_comm;
    // send/recv: a message carries its sender's thread; active messages
    // carry the receiving thread (its "handler"), received from any source
    int send_tag = am_ ? l.peer_thread : l.thread;
    int recv_tag = am_ ? l.thread : l.peer_thread;
    return std::unique_ptr<channel_t>(
        new channel_t(am_, recv_comm, send_comm, l.peer_rank, send_tag,
                      recv_tag, o.window, max_size));
  }

  bool supports(const options_t&, size_t, std::string*) { return true; }
  bool must_support(size_t) const { return true; }
  std::string protocol(size_t) const { return "-"; }
  void before_run() {}
  void after_run() {}
  void quiesce() { MPI_Barrier(MPI_COMM_WORLD); }

  void teardown()
  {
    for (auto& c : comms_) MPI_Comm_free(&c);
    comms_.clear();
  }

 private:
  MPI_Comm comm_of(int t) const
  {
    return comms_.empty() ? MPI_COMM_WORLD : comms_[static_cast<size_t>(t)];
  }

  int rank_ = 0, nranks_ = 1;
  bool am_ = false;
  std::vector<MPI_Comm> comms_;
};

}  // namespace bench

#endif  // LCI_BENCHMARKS_MPI_MPI_TRANSPORT_HPP
