// Our side of the benchmark engine (common/suite.hpp): LCI devices per
// thread (or the default device shared by all threads), send/recv through
// the matching engine, or active messages into a completion queue per
// thread.
//
// Devices: a message arrives on the remote device with the same index as
// the one it was sent from, so in loopback thread pairs (--pairs) a thread
// sends on its peer's device and progresses its own.
//
// Operations (--op): sendrecv (post_send / post_recv), am (post_am to the
// peer thread's registered completion queue; the receiver frees the
// buffer), put (post_put with a signal into the peer's registered receive
// buffer: the peer pops the signal from its thread's completion queue like
// an active message; each channel ships the rmr of its receive buffer to
// its peer in a message when it is made, and the peer takes it before its
// first put).
//
// Active-message buffers come from the library's default allocator
// (malloc; the receiver frees them), or, with LCI_BENCH_AM_ALLOCATOR=pool,
// from am_pool_t below through set_allocator: what a runtime that receives
// many active messages would install.
//
// Sizes above the eager limit need the rendezvous protocol; each size is
// first tried on a message to this rank itself, and a size the library
// refuses is skipped with the library's message (an error at or below
// get_max_bcopy_size(), where every size must work).
#ifndef LCI_BENCHMARKS_LCI_TRANSPORT_HPP
#define LCI_BENCHMARKS_LCI_TRANSPORT_HPP

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <lci.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/suite.hpp"

namespace bench
{

// Post until accepted, progressing `dev` in between.
template <typename Op>
lci::status_t post_until_accepted(Op&& op, lci::device_t dev)
{
  for (;;) {
    lci::status_t s = op();
    if (!s.is_retry()) return s;
    lci::progress_x().device(dev)();
  }
}

// An allocator of active-message buffers (set_allocator): buffers of up to
// kBlock bytes are recycled through a free list per thread (a buffer is
// allocated by the thread that progresses and given back by the thread
// that pops it, the same thread here); larger ones through the library's
// lci::allocator_recycling_t (a free list per size class, bounded), so
// that a large buffer keeps its pages instead of going back to glibc and
// the kernel. A 16-byte header before each buffer says which.
class am_pool_t final : public lci::allocator_base_t
{
 public:
  static constexpr size_t kBlock = 256;
  static constexpr size_t kHeader = 16;
  static constexpr size_t kMaxFree = 4096;  // per thread

  void* allocate(size_t size) override
  {
    char* p;
    if (size <= kBlock) {
      std::vector<char*>& list = free_list();
      if (!list.empty()) {
        p = list.back();
        list.pop_back();
        return p + kHeader;
      }
      p = static_cast<char*>(std::malloc(kHeader + kBlock));
    } else {
      p = static_cast<char*>(large_.allocate(kHeader + size));
    }
    if (!p) return nullptr;
    p[0] = size <= kBlock ? 1 : 0;
    return p + kHeader;
  }

  void deallocate(void* ptr) override
  {
    if (!ptr) return;
    char* p = static_cast<char*>(ptr) - kHeader;
    if (p[0] == 0) {
      large_.deallocate(p);
      return;
    }
    std::vector<char*>& list = free_list();
    if (list.size() < kMaxFree)
      list.push_back(p);
    else
      std::free(p);
  }

 private:
  struct cache_t {
    std::vector<char*> blocks;
    ~cache_t()
    {
      for (char* p : blocks) std::free(p);
    }
  };
  static std::vector<char*>& free_list()
  {
    static thread_local cache_t cache;
    return cache.blocks;
  }
  // up to 2 GiB of free large buffers: a window of 64 messages of 16 MiB
  // and the next window's
  lci::allocator_recycling_t large_{size_t(2) << 30};
};

// How the benchmark gives an active message's buffer back.
inline void release_am_buffer(void* buf, lci::allocator_base_t* pool)
{
  if (pool)
    pool->deallocate(buf);
  else
    std::free(buf);
}

class lci_transport_t
{
 public:
  enum class op_t { sendrecv, am, put };

  class channel_t
  {
   public:
    channel_t(op_t op, lci::device_t dev, lci::device_t send_dev, int peer,
              lci::tag_t my_tag, lci::tag_t peer_tag, lci::comp_t am_cq,
              lci::rcomp_t peer_rcomp, size_t max_size,
              lci::allocator_base_t* am_pool)
        : op_(op),
          dev_(dev),
          send_dev_(send_dev),
          peer_(peer),
          my_tag_(my_tag),
          peer_tag_(peer_tag),
          am_cq_(am_cq),
          peer_rcomp_(peer_rcomp),
          am_pool_(am_pool),
          sbuf_(max_size, 's'),
          rbuf_(max_size, 'r')
    {
      send_cq_ = lci::alloc_cq();
      recv_cq_ = lci::alloc_cq();
      recv_sync_ = lci::alloc_sync();
      if (op_ == op_t::put) exchange_rmr();
    }
    ~channel_t()
    {
      if (op_ == op_t::put) {
        lci::deregister_memory(&rmr_mr_);
        lci::free_comp(&rmr_sync_);
      }
      lci::free_comp(&send_cq_);
      lci::free_comp(&recv_cq_);
      lci::free_comp(&recv_sync_);
    }
    channel_t(const channel_t&) = delete;
    channel_t& operator=(const channel_t&) = delete;

    void post_recvs(long n, size_t size)
    {
      // active messages and puts need no receive (a put's signal comes
      // to am_cq_)
      if (op_ != op_t::sendrecv) return;
      use_sync_ = n == 1;
      const lci::comp_t c = use_sync_ ? recv_sync_ : recv_cq_;
      pending_recvs_ += post_n(n, [&] {
        return lci::post_recv_x(peer_, rbuf_.data(), size, peer_tag_, c)
            .device(dev_)();
      });
    }

    void wait_recvs(long n)
    {
      if (op_ == op_t::put) {  // a put's signal: the data is in rbuf_
        for (long got = 0; got < n;) {
          if (lci::cq_pop(am_cq_).is_retry())
            progress();
          else
            ++got;
        }
        return;
      }
      if (op_ == op_t::am) {
        for (long got = 0; got < n;) {
          lci::status_t s = lci::cq_pop(am_cq_);
          if (s.is_retry()) {
            progress();
            continue;
          }
          // the receiver owns an active message
          release_am_buffer(s.buffer, am_pool_);
          ++got;
        }
        return;
      }
      if (use_sync_) {
        if (pending_recvs_ > 0)
          while (!lci::sync_test(recv_sync_, nullptr)) progress();
        pending_recvs_ = 0;
        return;
      }
      while (pending_recvs_ > 0) {
        if (lci::cq_pop(recv_cq_).is_retry())
          progress();
        else
          --pending_recvs_;
      }
    }

    void send_n(long n, size_t size)
    {
      // one loop per operation, each post written as a user would (the
      // OFF object built in place, so its call() folds to the lean entry)
      long pending;
      if (op_ == op_t::put)
        pending = post_n(n, [&] {
          return lci::post_put_x(peer_, sbuf_.data(), size, send_cq_, 0,
                                 peer_rmr())
              .remote_comp(peer_rcomp_)
              .device(send_dev_)();
        });
      else if (op_ == op_t::am)
        pending = post_n(n, [&] {
          return lci::post_am_x(peer_, sbuf_.data(), size, send_cq_,
                                peer_rcomp_)
              .device(send_dev_)();
        });
      else
        pending = post_n(n, [&] {
          return lci::post_send_x(peer_, sbuf_.data(), size, my_tag_, send_cq_)
              .device(send_dev_)();
        });
      while (pending > 0) {
        if (lci::cq_pop(send_cq_).is_retry())
          progress();
        else
          --pending;
      }
    }

    // progress on this channel's device (its peer may send through it)
    void keep_progress() { progress(); }

   private:
    static constexpr lci::tag_t kRmrTag = 0x524d52'00ull;  // "RMR" + thread

    void progress() { lci::progress_x().device(dev_)(); }

    // Posts n messages with post() (progressing this channel's device while
    // it says retry); returns how many completions are to come (posted).
    template <typename Post>
    long post_n(long n, Post&& post)
    {
      long pending = 0;
      for (long i = 0; i < n; ++i) {
        lci::status_t s;
        while ((s = post()).is_retry()) progress();
        if (s.is_posted()) ++pending;
      }
      return pending;
    }

    // Registers the receive buffer and ships its rmr to the peer channel
    // (tag kRmrTag + this thread); the peer's rmr is received meanwhile and
    // waited for at the first put (peer_rmr), when every channel exists.
    void exchange_rmr()
    {
      rmr_mr_ = lci::register_memory(rbuf_.data(), rbuf_.size());
      my_rmr_ = lci::get_rmr(rmr_mr_);
      rmr_sync_ = lci::alloc_sync();
      post_until_accepted(lci::post_recv_x(peer_, &peer_rmr_, sizeof(peer_rmr_),
                                           kRmrTag + peer_tag_, rmr_sync_)
                              .device(dev_),
                          dev_);
      post_until_accepted(lci::post_send_x(peer_, &my_rmr_, sizeof(my_rmr_),
                                           kRmrTag + my_tag_, lci::COMP_NULL)
                              .device(send_dev_),
                          dev_);
    }

    const lci::rmr_t& peer_rmr()
    {
      if (!have_peer_rmr_) {
        while (!lci::sync_test(rmr_sync_, nullptr)) progress();
        have_peer_rmr_ = true;
      }
      return peer_rmr_;
    }

    op_t op_;
    lci::device_t dev_, send_dev_;
    int peer_;
    lci::tag_t my_tag_, peer_tag_;
    lci::comp_t am_cq_;
    lci::rcomp_t peer_rcomp_;
    lci::allocator_base_t* am_pool_;  // null: the default allocator
    std::vector<char> sbuf_, rbuf_;
    lci::comp_t send_cq_, recv_cq_, recv_sync_;
    bool use_sync_ = true;
    long pending_recvs_ = 0;
    lci::mr_t rmr_mr_;
    lci::rmr_t my_rmr_, peer_rmr_;
    lci::comp_t rmr_sync_;
    bool have_peer_rmr_ = false;
  };

  static std::vector<std::string> op_names()
  {
    return {"sendrecv", "am", "put"};
  }

  lci_transport_t()
  {
    lci::g_runtime_init();
    rank_ = lci::get_rank_me();
    nranks_ = lci::get_rank_n();
    // what ran, for the drivers (benchmarks/compare) to report
    if (rank_ == 0)
      std::printf("# backend: %s\n",
                  lci::get_g_runtime().get_attr_backend().c_str());
  }
  ~lci_transport_t() { lci::g_runtime_fina(); }

  const char* library() const { return "lci"; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  std::string thread_mode(bool shared) const
  {
    return shared ? "shared-device" : "dedicated-device";
  }
  std::string mode_override() const
  {
    return busy_owner_us_ >= 0 ? "busy-owner" : "";
  }

  // --busy-owner US (lci_msgrate): see msgrate.cpp. Call before setup.
  void set_busy_owner(long us) { busy_owner_us_ = us; }

  void setup(const options_t& o)
  {
    op_ = o.op == "am" ? op_t::am : o.op == "put" ? op_t::put : op_t::sendrecv;
    shared_ = o.shared;
    int ndev = busy() ? 2 : (o.shared ? 0 : o.threads);
    // dedicated: each thread's device has its own packet pool as well, the
    // replicated setup the library recommends (nothing shared but the
    // runtime); LCI_BENCH_SHARED_POOL=1 keeps the runtime's default pool
    const char* ap = std::getenv("LCI_BENCH_AM_ALLOCATOR");
    if (ap && std::string(ap) == "pool") {
      lci::set_allocator(&am_pool_);
      use_am_pool_ = true;
      if (rank_ == 0)
        std::printf("# active-message buffers: am_pool_t (set_allocator)\n");
    } else if (ap && *ap && std::string(ap) != "default") {
      throw std::runtime_error(std::string("LCI_BENCH_AM_ALLOCATOR=") + ap +
                               ": expected pool or default");
    }
    const char* sp = std::getenv("LCI_BENCH_SHARED_POOL");
    const bool own_pools = !busy() && !(sp && std::string(sp) == "1");
    for (int i = 0; i < ndev; ++i) {
      if (own_pools) {
        pools_.push_back(lci::alloc_packet_pool());
        devs_.push_back(lci::alloc_device_x().packet_pool(pools_.back())());
      } else {
        devs_.push_back(lci::alloc_device());
      }
    }
    // completion queues for active messages, registered in the same order
    // on every rank so the handles agree: the probe's, then one per thread
    probe_am_cq_ = lci::alloc_cq();
    probe_rcomp_ = lci::register_rcomp(probe_am_cq_);
    for (int t = 0; op_ != op_t::sendrecv && t < o.threads; ++t) {
      am_cqs_.push_back(lci::alloc_cq());
      rcomps_.push_back(lci::register_rcomp(am_cqs_.back()));
    }
  }

  std::unique_ptr<channel_t> make_channel(const options_t&, const lane_t& l,
                                          size_t max_size)
  {
    lci::device_t dev = device_of(l.thread);
    lci::device_t send_dev =
        nranks_ == 1 && !l.self ? device_of(l.peer_thread) : dev;
    const bool signalled = op_ != op_t::sendrecv;
    lci::comp_t am_cq = signalled ? am_cqs_[l.thread] : lci::comp_t();
    lci::rcomp_t peer_rcomp =
        signalled ? rcomps_[l.peer_thread] : lci::RCOMP_NULL;
    return std::unique_ptr<channel_t>(
        new channel_t(op_, dev, send_dev, l.peer_rank, l.thread, l.peer_thread,
                      am_cq, peer_rcomp, max_size, am_pool()));
  }

  // Sends one message of `size` bytes to this rank itself and receives it;
  // false (with the library's message) if the library refuses the size.
  bool supports(const options_t&, size_t size, std::string* why)
  {
    const lci::tag_t tag = kProbeTag;
    lci::device_t dev = lci::get_default_device();
    std::vector<char> sbuf(size > 0 ? size : 1), rbuf(sbuf.size());
    lci::comp_t cq = lci::alloc_cq();
    lci::mr_t mr;
    lci::status_t s;
    try {
      if (op_ == op_t::put) {
        mr = lci::register_memory(rbuf.data(), rbuf.size());
        s = post_until_accepted(
            lci::post_put_x(rank_, sbuf.data(), size, cq, 0, lci::get_rmr(mr))
                .remote_comp(probe_rcomp_)
                .device(dev),
            dev);
      } else if (op_ == op_t::am)
        s = post_until_accepted(
            lci::post_am_x(rank_, sbuf.data(), size, cq, probe_rcomp_)
                .device(dev),
            dev);
      else
        s = post_until_accepted(
            lci::post_send_x(rank_, sbuf.data(), size, tag, cq).device(dev),
            dev);
    } catch (const lci::fatal_error& e) {
      *why = e.what();
      if (!mr.is_empty()) lci::deregister_memory(&mr);
      lci::free_comp(&cq);
      return false;
    }
    if (op_ != op_t::sendrecv) {
      lci::status_t r;
      while ((r = lci::cq_pop(probe_am_cq_)).is_retry())
        lci::progress_x().device(dev)();
      if (op_ == op_t::am) release_am_buffer(r.buffer, am_pool());
    } else {
      lci::post_recv_x(rank_, rbuf.data(), size, tag, lci::COMP_NULL)
          .device(dev)();
    }
    if (s.is_posted())
      while (lci::cq_pop(cq).is_retry()) lci::progress_x().device(dev)();
    if (!mr.is_empty()) lci::deregister_memory(&mr);
    lci::free_comp(&cq);
    return true;
  }

  bool must_support(size_t size) const
  {
    return size <= lci::get_max_bcopy_size();
  }

  std::string protocol(size_t size) const
  {
    if (op_ == op_t::put) return "rma";  // an RDMA write, then the signal
    if (size <= lci::get_g_runtime().get_attr_max_inject_size())
      return "inject";
    if (size <= lci::get_max_bcopy_size()) return "eager";
    return "rendezvous";
  }

  void before_run()
  {
    if (!busy()) return;
    stop_owner_ = false;
    // the owner of the other device attends to it only now and then
    owner_ = std::thread([this] {
      lci::device_t mine = devs_[1 - rank_];
      while (!stop_owner_.load()) {
        std::this_thread::sleep_for(std::chrono::microseconds(busy_owner_us_));
        lci::progress_x().device(mine)();
      }
    });
  }

  void after_run()
  {
    stop_owner_ = true;
    if (owner_.joinable()) owner_.join();
  }

  void quiesce() {}

  void teardown()
  {
    for (size_t i = 0; i < rcomps_.size(); ++i) {
      lci::deregister_rcomp(rcomps_[i]);
      lci::free_comp(&am_cqs_[i]);
    }
    lci::deregister_rcomp(probe_rcomp_);
    lci::free_comp(&probe_am_cq_);
    for (auto& d : devs_) lci::free_device(&d);
    devs_.clear();
    for (auto& p : pools_) lci::free_packet_pool(&p);
    pools_.clear();
  }

 private:
  static constexpr lci::tag_t kProbeTag = 0x5052'4f42'45ull;  // "PROBE"

  bool busy() const { return busy_owner_us_ >= 0; }
  lci::allocator_base_t* am_pool()
  {
    return use_am_pool_ ? &am_pool_ : nullptr;
  }

  // busy owner: both sides send on device `rank`, which lands on the peer's
  // device `rank`, the one the peer's owner thread progresses
  lci::device_t device_of(int t) const
  {
    if (busy()) return devs_[rank_];
    return shared_ ? lci::get_default_device() : devs_[t];
  }

  int rank_ = 0, nranks_ = 1;
  op_t op_ = op_t::sendrecv;
  bool shared_ = false;
  long busy_owner_us_ = -1;
  std::vector<lci::device_t> devs_;
  std::vector<lci::packet_pool_t> pools_;
  lci::comp_t probe_am_cq_;
  lci::rcomp_t probe_rcomp_ = lci::RCOMP_NULL;
  std::vector<lci::comp_t> am_cqs_;
  std::vector<lci::rcomp_t> rcomps_;
  std::thread owner_;
  std::atomic<bool> stop_owner_{false};
  am_pool_t am_pool_;  // outlives g_runtime_fina (the destructor's body)
  bool use_am_pool_ = false;
};

}  // namespace bench

#endif  // LCI_BENCHMARKS_LCI_TRANSPORT_HPP
