// post_comm with a list of buffers (the paper's Section 3.3.1; upstream LCI
// 2's .buffers() and .rbuffers()). A list becomes single-buffer posts of
// post_comm joined by one completion object (list_comp_t), so that every
// protocol, check and failure path is the single-buffer one:
//
//   send / active message  one message: the list gathered into a packet
//                          (get_upacket's, sent without a further copy) up
//                          to the eager limit, else into a staging buffer
//                          sent with the rendezvous protocol;
//   receive                one message into a staging buffer of the list's
//                          total size, scattered into the list in order;
//   put / get              one transfer per buffer (to rbuffers[i], or to
//                          consecutive bytes of rmr from remote_disp); with
//                          remote_comp, a zero-byte put or get with signal
//                          after every transfer completed, so the target's
//                          remote completion is signalled once, after the
//                          data.
//
// The list completes once: done at once, or its completion object signalled
// once, with buffer = the first buffer's base and size = the total bytes
// (a receive: the bytes received), and the error code of the first part
// that failed.
#include "core/post_list.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "core/post.hpp"
#include "resource/device.hpp"
#include "resource/endpoint.hpp"
#include "resource/mr.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

namespace
{

const char* const kCall = "post_comm";

// Joins the posts of one list. `remaining` counts the parts still to
// complete plus one that the posting call holds until it posted them all,
// so only the last of them ends the list (phase_over).
class list_comp_t final : public comp_impl_t
{
 public:
  std::atomic<size_t> remaining{1};
  std::atomic<int> error{static_cast<int>(errorcode_t::done)};
  status_t result;                   // the list's status
  comp_impl_t* user = nullptr;       // signalled when the list ends in progress
  bool recv = false;                 // a receive: scatter `staging`
  char* staging = nullptr;           // malloc'ed: gathered or staged bytes
  buffers_t scatter;                 // a receive's list
  post_comm_x* signal_op = nullptr;  // put / get with signal: the signal

  ~list_comp_t() override
  {
    std::free(staging);
    delete signal_op;
  }

  void fail(errorcode_t code)
  {
    int expected = static_cast<int>(errorcode_t::done);
    error.compare_exchange_strong(expected, static_cast<int>(code),
                                  std::memory_order_relaxed);
  }

  // A part completed (signalled by progress, or done in its post).
  void signal(status_t s) override
  {
    if (!s.is_done()) fail(s.error.errorcode);
    if (recv) {
      result.rank = s.rank;
      result.tag = s.tag;
      result.size = s.size;
    }
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1 && phase_over())
      end_in_progress();
  }

  // Whoever took `remaining` to 0 calls this: true when the list is over;
  // false when the signal was posted and its completion will end it.
  bool phase_over()
  {
    if (signal_op) {
      post_comm_x op = *signal_op;
      delete signal_op;
      signal_op = nullptr;
      if (error.load(std::memory_order_relaxed) ==
          static_cast<int>(errorcode_t::done)) {
        remaining.store(2, std::memory_order_relaxed);
        try {
          op.local_comp_ = comp_t(this);
          op.allow_retry_ = false;
          status_t s = op();
          if (s.is_done()) remaining.fetch_sub(1, std::memory_order_relaxed);
        } catch (const fatal_error&) {
          // a failure of the signal (its target failed) is the list's
          fail(errorcode_t::fatal);
          remaining.fetch_sub(1, std::memory_order_relaxed);
        }
        if (remaining.fetch_sub(1, std::memory_order_acq_rel) != 1)
          return false;
      }
    }
    if (recv && staging) {
      size_t left = result.size;
      for (const buffer_t& b : scatter) {
        if (left == 0) break;
        const size_t n = b.size < left ? b.size : left;
        std::memcpy(b.base, staging + (result.size - left), n);
        left -= n;
      }
    }
    result.error = static_cast<errorcode_t>(error.load());
    return true;
  }

  void end_in_progress()
  {
    status_t s = result;
    comp_impl_t* u = user;
    delete this;
    u->signal(s);
  }
};

// The single-buffer post that a part of the list is.
post_comm_x part_of(const post_comm_x& x, void* buffer, size_t size, mr_t mr,
                    list_comp_t* lc, bool allow_retry)
{
  post_comm_x p = x;
  p.buffers_.clear();
  p.rbuffers_.clear();
  p.local_buffer_ = buffer;
  p.size_ = size;
  p.mr_ = mr;
  p.local_comp_ = comp_t(lc);
  p.allow_done_ = true;
  p.allow_posted_ = true;
  p.allow_retry_ = allow_retry;
  return p;
}

// The list's bad input, before anything is posted.
size_t check_list(const post_comm_x& x)
{
  const buffers_t& b = x.buffers_;
  if (b.empty())
    util::throw_fatal(kCall, ": rbuffers (", x.rbuffers_.size(),
                      " remote buffers) given without buffers");
  if (x.local_buffer_ || x.size_)
    util::throw_fatal(kCall,
                      ": with buffers, local_buffer and size must be "
                      "nullptr and 0 (got ",
                      x.local_buffer_, " and ", x.size_, ")");
  if (b.size() > MAX_BUFFERS)
    util::throw_fatal(kCall, ": a list of ", b.size(),
                      " buffers exceeds MAX_BUFFERS (", MAX_BUFFERS, ")");
  if (!x.rbuffers_.empty() && x.rbuffers_.size() != b.size())
    util::throw_fatal(kCall, ": ", b.size(), " buffers but ",
                      x.rbuffers_.size(), " rbuffers (one per buffer)");
  if (!x.rbuffers_.empty() && !x.rmr_.is_empty())
    util::throw_fatal(kCall,
                      ": both rmr and rbuffers given (rbuffers name "
                      "every remote buffer)");
  size_t total = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!b[i].base && b[i].size)
      util::throw_fatal(kCall, ": buffers[", i, "] is a null buffer with size ",
                        b[i].size);
    if (static_cast<int64_t>(b[i].size) < 0 ||
        static_cast<int64_t>(total + b[i].size) < 0)
      util::throw_fatal(kCall, ": buffers[", i, "] has size ", b[i].size,
                        ", more than any buffer");
    total += b[i].size;
  }
  return total;
}

// A put or get list (a send, AM or receive list has no remote buffers).
bool is_rma(const post_comm_x& x)
{
  return !x.rbuffers_.empty() || !x.rmr_.is_empty();
}

// Where each buffer of a put/get list goes: rbuffers[i], or the next
// bytes of rmr.
std::vector<rbuffer_t> remote_targets(const post_comm_x& x)
{
  std::vector<rbuffer_t> to = x.rbuffers_;
  if (to.empty()) {
    uint64_t disp = x.remote_disp_;
    for (const buffer_t& b : x.buffers_) {
      to.emplace_back(disp, x.rmr_);
      disp += b.size;
    }
  }
  return to;
}

// Every remote buffer is checked before anything is allocated or the first
// transfer starts: a bad one later in the list must not leave the earlier
// ones in flight.
void check_remote_buffers(const post_comm_x& x, rt_dev_t rd)
{
  if (!is_rma(x) || x.rank_ < 0 || x.rank_ >= rd.rt->rank_n) return;
  const std::vector<rbuffer_t> to = remote_targets(x);
  for (size_t i = 0; i < x.buffers_.size(); ++i)
    check_rmr(rd.rt,
              x.direction_ == direction_t::IN ? "post_comm (get)"
                                              : "post_comm (put)",
              x.rank_, to[i].rmr, to[i].disp, x.buffers_[i].size);
}

// Posts the parts with `lc` as their completion, then ends the list if
// they all completed: done, or posted (lc signals `user` later), or a
// retry code (nothing was posted; lc is freed).
status_t post_parts(const post_comm_x& x, list_comp_t* lc, bool allow_retry,
                    rt_dev_t rd, size_t total)
{
  const buffers_t& bufs = x.buffers_;
  if (is_rma(x)) {
    const std::vector<rbuffer_t> to = remote_targets(x);
    lc->remaining.store(bufs.size() + 1, std::memory_order_relaxed);
    for (size_t i = 0; i < bufs.size(); ++i) {
      post_comm_x p = part_of(x, bufs[i].base, bufs[i].size, bufs[i].mr, lc,
                              i == 0 && allow_retry);
      p.remote_comp_ = RCOMP_NULL;
      p.rmr_ = to[i].rmr;
      p.remote_disp_ = to[i].disp;
      status_t s;
      try {
        s = p();
      } catch (...) {
        if (i > 0) throw;  // parts are in flight: lc stays theirs
        delete lc;
        throw;
      }
      if (s.is_retry()) {  // the first part only
        delete lc;
        return s;
      }
      if (s.is_done()) lc->signal(s);
    }
    if (x.remote_comp_ != RCOMP_NULL) {
      post_comm_x sig = part_of(x, nullptr, 0, mr_t(), lc, false);
      sig.rmr_ = to[0].rmr;
      sig.remote_disp_ = to[0].disp;
      lc->signal_op = new post_comm_x(sig);
    }
  } else {
    // one message: a send's list gathered, a receive's staged
    const bool in = x.direction_ == direction_t::IN;
    void* buffer = nullptr;
    packet_pool_impl_t* pool = x.packet_pool_.p_impl
                                   ? checked_pool(x.packet_pool_, kCall)
                                   : rd.dev->pool;
    packet_t* pkt = nullptr;
    if (!in && total <= eager_payload_limit(pool, rd.dev)) {
      pkt = pool->get();
      if (pkt) {
        pkt->user_owned.store(true, std::memory_order_relaxed);
        buffer = pkt->data() + packet_pool_impl_t::kHeaderBytes;
      }
    }
    if (!pkt && total) {
      lc->staging = static_cast<char*>(std::malloc(total));
      if (!lc->staging) {
        delete lc;
        util::throw_fatal(kCall, ": cannot allocate ", total,
                          " bytes to stage a list of buffers");
      }
      buffer = lc->staging;
    }
    if (!in) {
      char* to = static_cast<char*>(buffer);
      for (const buffer_t& b : bufs) {
        if (b.size) std::memcpy(to, b.base, b.size);
        to += b.size;
      }
    } else {
      lc->recv = true;
      lc->scatter = bufs;
    }
    lc->remaining.store(2, std::memory_order_relaxed);
    post_comm_x p = part_of(x, buffer, total, mr_t(), lc, allow_retry);
    if (pkt) p.packet_pool_ = packet_pool_t(pool);
    status_t s;
    try {
      s = p();
    } catch (...) {
      if (pkt && pkt->user_owned.exchange(false, std::memory_order_relaxed))
        packet_pool_impl_t::put(pkt);
      delete lc;
      throw;
    }
    if (s.is_retry()) {
      if (pkt && pkt->user_owned.exchange(false, std::memory_order_relaxed))
        packet_pool_impl_t::put(pkt);
      delete lc;
      return s;
    }
    if (s.is_done()) lc->signal(s);
  }
  if (lc->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
      lc->phase_over()) {
    status_t s = lc->result;
    delete lc;
    return s;
  }
  return status_t(errorcode_t::posted);
}

}  // namespace

status_t post_list(direction_t direction, int rank, void* local_buffer,
                   size_t size, comp_t local_comp, runtime_t runtime,
                   device_t device, packet_pool_t packet_pool,
                   matching_engine_t matching_engine, mr_t mr,
                   uint64_t remote_disp, rmr_t rmr, tag_t tag,
                   rcomp_t remote_comp, void* user_context,
                   matching_policy_t matching_policy, bool allow_done,
                   bool allow_posted, bool allow_retry,
                   comp_semantic_t comp_semantic, endpoint_t endpoint,
                   const buffers_t& buffers, const rbuffers_t& rbuffers)
{
  const post_comm_x x =
      post_comm_x(direction, rank, local_buffer, size, local_comp)
          .runtime(runtime)
          .device(device)
          .packet_pool(packet_pool)
          .matching_engine(matching_engine)
          .mr(mr)
          .remote_disp(remote_disp)
          .rmr(rmr)
          .tag(tag)
          .remote_comp(remote_comp)
          .user_context(user_context)
          .matching_policy(matching_policy)
          .allow_done(allow_done)
          .allow_posted(allow_posted)
          .allow_retry(allow_retry)
          .comp_semantic(comp_semantic)
          .endpoint(endpoint)
          .buffers(buffers)
          .rbuffers(rbuffers);
  const size_t total = check_list(x);
  rt_dev_t rd = resolve_device(
      x.runtime_, endpoint_device(x.endpoint_, x.device_, kCall), kCall);
  check_remote_buffers(x, rd);
  auto* lc = new list_comp_t;
  lc->result =
      done_status(x.rank_, x.buffers_[0].base, total, x.tag_, x.user_context_);
  const comp_t user = x.local_comp_;
  // COMP_NULL, COMP_NULL_RETRY or allow_posted(false): wait here, on a
  // synchronizer of our own
  const bool wait =
      user.is_empty() || user == COMP_NULL_RETRY || !x.allow_posted_;
  if (!wait) {
    lc->user = user.p_impl;
    status_t s = post_parts(x, lc, x.allow_retry_, rd, total);
    if (s.is_done() && !x.allow_done_) {
      user.p_impl->signal(s);
      s.error = errorcode_t::posted;
    }
    return s;
  }
  comp_t sync = alloc_sync_x().runtime(runtime_t(rd.rt))();
  lc->user = sync.p_impl;
  // COMP_NULL never returns retry; COMP_NULL_RETRY may
  const bool may_retry = user == COMP_NULL_RETRY && x.allow_retry_;
  // an exception (of a post or of progress) leaves `sync` allocated:
  // parts may be in flight and signal it later
  status_t s = post_parts(x, lc, may_retry, rd, total);
  if (s.is_posted()) {
    while (!sync_test(sync, &s)) progress_x().device(device_t(rd.dev))();
  }
  free_comp(&sync);
  return s;
}

}  // namespace lci
