#include "net/ibv/device.hpp"

#include <cerrno>
#include <cstring>
#include <random>

#include "net/ibv/imm.hpp"
#include "util/error.hpp"

namespace lci::net::ibv
{
namespace
{

// The address of a device: [lid 2][gid 16][n 4] then, for each rank s,
// [qpn 4][psn 4] of this device's queue pair towards s.
constexpr size_t kHead = 2 + 16 + 4;

template <typename T>
void put(std::string* out, T v)
{
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

template <typename T>
T get(const std::string& s, size_t at)
{
  T v;
  std::memcpy(&v, s.data() + at, sizeof(v));
  return v;
}

[[noreturn]] void verbs_failed(const char* call, int err)
{
  util::throw_fatal("alloc_device: ibv backend: ", call,
                    " failed: ", std::strerror(err));
}

}  // namespace

ibv_device_t::ibv_device_t(ibv_context_t& ctx, const device_attr_t& attr)
    : v_(ctx.verbs()),
      cache_(ctx.cache()),
      rank_me_(ctx.rank_me()),
      rank_n_(ctx.rank_n()),
      lazy_(ctx.lazy()),
      locks_(attr.ibv_td_strategy, ctx.rank_n()),
      qps_(ctx.verbs())
{
  const port_t& p = v_->port();
  max_inline_ = p.max_inline;
  // one more receive than the core keeps posted: the buffer a peer's write
  // with immediate consumed goes back while the core may post its next
  const uint32_t srq_wr = static_cast<uint32_t>(
      std::min<size_t>(attr.net_max_recvs + 16, p.max_srq_wr));
  const uint32_t sq_wr =
      static_cast<uint32_t>(std::min<size_t>(attr.net_max_sends, p.max_qp_wr));
  const size_t cqe = std::min<size_t>(
      std::max<size_t>(attr.net_max_cqes, srq_wr + 64u), p.max_cqe);
  credits_.store(static_cast<int64_t>(cqe) - srq_wr);
  nrecs_ = srq_wr;
  recs_.reset(new recv_rec_t[nrecs_]);
  free_.reserve(nrecs_);
  for (size_t i = nrecs_; i-- > 0;) free_.push_back(&recs_[i]);
  try {
    cq_ = v_->create_cq(static_cast<int>(cqe));
    if (!cq_) verbs_failed("ibv_create_cq", errno);
    srq_ = v_->create_srq(static_cast<int>(srq_wr));
    if (!srq_) verbs_failed("ibv_create_srq", errno);
    for (int i = 0; i < locks_.thread_domains(); ++i) {
      void* td = v_->alloc_td();
      if (!td) break;  // no thread domains: queue pairs without one
      tds_.push_back(td);
    }
    std::random_device rd;
    for (int r = 0; r < rank_n_; ++r) {
      void* td =
          tds_.empty() ? nullptr : tds_[static_cast<size_t>(r) % tds_.size()];
      qp_t qp = v_->create_qp(cq_, srq_, td, sq_wr, max_inline_);
      if (!qp.handle) verbs_failed("ibv_create_qp", errno);
      qps_.add(qp, rd() & 0xffffff);
    }
  } catch (...) {
    close();
    throw;
  }
}

ibv_device_t::~ibv_device_t() { close(); }

void ibv_device_t::close()
{
  // queue pairs before the queues they use, thread domains last
  qps_.clear();
  if (srq_) v_->destroy_srq(srq_);
  if (cq_) v_->destroy_cq(cq_);
  for (void* td : tds_) v_->dealloc_td(td);
  srq_ = cq_ = nullptr;
  tds_.clear();
}

std::string ibv_device_t::get_address()
{
  const port_t& p = v_->port();
  std::string out;
  put<uint16_t>(&out, p.lid);
  out.append(reinterpret_cast<const char*>(p.gid), 16);
  put<uint32_t>(&out, static_cast<uint32_t>(rank_n_));
  for (int r = 0; r < rank_n_; ++r) {
    put<uint32_t>(&out, qps_.qp(r).qpn);
    put<uint32_t>(&out, qps_.psn(r));
  }
  return out;
}

void ibv_device_t::connect(const std::vector<std::string>& addrs)
{
  if (static_cast<int>(addrs.size()) != rank_n_)
    util::throw_fatal("alloc_device: ibv backend: ", addrs.size(),
                      " addresses for ", rank_n_, " ranks");
  for (int r = 0; r < rank_n_; ++r) {
    const std::string& a = addrs[static_cast<size_t>(r)];
    if (a.size() < kHead ||
        get<uint32_t>(a, 18) != static_cast<uint32_t>(rank_n_) ||
        a.size() != kHead + 8 * static_cast<size_t>(rank_n_))
      util::throw_fatal("alloc_device: rank ", r,
                        " sent no ibv address for a job of ", rank_n_,
                        " ranks (is its LCI_ATTR_BACKEND ibv too?)");
    qp_addr_t remote;
    remote.lid = get<uint16_t>(a, 0);
    std::memcpy(remote.gid, a.data() + 2, 16);
    const size_t at = kHead + 8 * static_cast<size_t>(rank_me_);
    remote.qpn = get<uint32_t>(a, at);
    remote.psn = get<uint32_t>(a, at + 4);
    qps_.to_rtr(r, remote);
    if (!lazy_) qps_.ensure_rts(r);
  }
}

// inline sends: the work request carries the bytes
route_caps_t ibv_device_t::route(int)
{
  return route_caps_t{max_inline_, false};
}

uint32_t ibv_device_t::local_key(const void* buf, size_t size, void* desc)
{
  if (desc) return static_cast<const reg_cache_t::entry_t*>(desc)->mr.lkey;
  return cache_->lkey(buf, size);
}

error_t ibv_device_t::post(int rank, wr_t& wr, void* ctx, tag_t tag)
{
  const uint64_t id = reinterpret_cast<uintptr_t>(ctx);
  if (id & 3)
    util::throw_fatal("ibv backend: a context ", ctx, " not 4-byte aligned");
  wr.wr_id = id | tag;
  wr.signaled = true;
  util::spinlock_t& lock = locks_.of(rank);
  if (!lock.try_lock()) return errorcode_t::retry_lock;
  if (qps_.state(rank) != qp_state_t::rts) {
    try {
      qps_.ensure_rts(rank);
    } catch (...) {
      lock.unlock();
      throw;
    }
  }
  if (credits_.fetch_sub(1, std::memory_order_acquire) <= 0) {
    credits_.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    return errorcode_t::retry_nomem;
  }
  const int rc = v_->post_send(qps_.qp(rank), wr);
  lock.unlock();
  if (rc == 0) return errorcode_t::posted;
  credits_.fetch_add(1, std::memory_order_relaxed);
  if (rc == ENOMEM) return errorcode_t::retry_nomem;
  util::throw_fatal("ibv backend: ibv_post_send to rank ", rank,
                    " failed: ", std::strerror(rc));
}

error_t ibv_device_t::send_copy(int rank, const void* head, size_t hlen,
                                const void* tail, size_t tlen)
{
  if (hlen + tlen > max_inline_)
    util::throw_fatal("ibv backend: a ", hlen + tlen,
                      "-byte inline send exceeds the device's ", max_inline_);
  wr_t wr;
  wr.op = op_t::send;
  wr.inline_data = true;
  wr.nsge = 0;
  if (hlen) wr.sge[wr.nsge++] = {head, static_cast<uint32_t>(hlen), 0};
  if (tlen) wr.sge[wr.nsge++] = {tail, static_cast<uint32_t>(tlen), 0};
  error_t e = post(rank, wr, nullptr, tag_internal);
  return e.is_posted() ? error_t(errorcode_t::done) : e;
}

error_t ibv_device_t::post_send(int rank, const void* buf, size_t size,
                                void* ctx)
{
  wr_t wr;
  wr.op = op_t::send;
  wr.sge[0] = {buf, static_cast<uint32_t>(size), cache_->lkey(buf, size)};
  return post(rank, wr, ctx, tag_send);
}

error_t ibv_device_t::post_send_network(int rank, const void* buf, size_t size,
                                        void* ctx)
{
  return post_send(rank, buf, size, ctx);
}

wr_t ibv_device_t::rma_wr(op_t op, const void* buf, size_t size, void* desc,
                          const remote_t& remote)
{
  wr_t wr;
  wr.op = op;
  wr.nsge = size ? 1 : 0;
  if (size)
    wr.sge[0] = {buf, static_cast<uint32_t>(size), local_key(buf, size, desc)};
  wr.raddr = remote.base + remote.disp;
  wr.rkey = static_cast<uint32_t>(remote.rkey);  // the device's half
  return wr;
}

// an RC write completes once the target acknowledged it: the data is there,
// delivered or not asked
error_t ibv_device_t::post_write(int rank, const void* buf, size_t size,
                                 void* desc, const remote_t& remote, void* ctx,
                                 bool)
{
  wr_t wr = rma_wr(op_t::write, buf, size, desc, remote);
  return post(rank, wr, ctx, tag_write);
}

error_t ibv_device_t::post_writeimm(int rank, const void* buf, size_t size,
                                    void* desc, const remote_t& remote,
                                    uint64_t imm, void* ctx)
{
  wr_t wr = rma_wr(op_t::write_imm, buf, size, desc, remote);
  wr.imm_be = encode_imm(imm);
  return post(rank, wr, ctx, tag_write);
}

error_t ibv_device_t::post_read(int rank, void* buf, size_t size, void* desc,
                                const remote_t& remote, void* ctx)
{
  wr_t wr = rma_wr(op_t::read, buf, size, desc, remote);
  return post(rank, wr, ctx, tag_read);
}

error_t ibv_device_t::post_recv(void* buf, size_t size, void* ctx)
{
  const uint32_t lkey = cache_->lkey(buf, size);
  recv_rec_t* rec;
  {
    util::spin_guard_t g(free_lock_);
    if (free_.empty()) return errorcode_t::retry_nomem;
    rec = free_.back();
    free_.pop_back();
  }
  *rec = {buf, static_cast<uint32_t>(size), lkey, ctx};
  int rc = EBUSY;
  if (srq_lock_.try_lock()) {
    rc = v_->post_srq_recv(srq_, buf, rec->len, lkey,
                           reinterpret_cast<uintptr_t>(rec));
    srq_lock_.unlock();
  }
  if (rc == 0) {
    srq_posted_.fetch_add(1, std::memory_order_relaxed);
    return errorcode_t::posted;
  }
  {
    util::spin_guard_t g(free_lock_);
    free_.push_back(rec);
  }
  if (rc == EBUSY) return errorcode_t::retry_lock;
  if (rc == ENOMEM) return errorcode_t::retry_nomem;
  util::throw_fatal("ibv backend: ibv_post_srq_recv failed: ",
                    std::strerror(rc));
}

bool ibv_device_t::is_recv(uint64_t wr_id) const
{
  const uintptr_t lo = reinterpret_cast<uintptr_t>(recs_.get());
  return wr_id >= lo && wr_id < lo + nrecs_ * sizeof(recv_rec_t);
}

size_t ibv_device_t::poll_comp(cqe_t* out, size_t max, char*, size_t)
{
  constexpr size_t kBatch = 16;
  wc_t wc[kBatch];
  if (max > kBatch) max = kBatch;
  if (!cq_lock_.try_lock()) return 0;
  const int n = v_->poll_cq(cq_, wc, static_cast<int>(max));
  cq_lock_.unlock();
  if (n < 0) util::throw_fatal("ibv backend: ibv_poll_cq failed (", n, ")");
  size_t k = 0;
  for (int i = 0; i < n; ++i) {
    const wc_t& w = wc[i];
    cqe_t c{cqe_t::kind_t::send, nullptr, 0, 0, w.error};
    if (w.error) c.rank = qps_.rank_of(w.qpn);
    if (is_recv(w.wr_id)) {
      auto* rec = reinterpret_cast<recv_rec_t*>(w.wr_id);
      if (w.kind == wc_t::kind_t::recv_imm && !w.error) {
        // the core's buffer is still its posted receive: post it again
        c.kind = cqe_t::kind_t::remote_write;
        c.imm = decode_imm(w.imm_be);
        srq_lock_.lock();
        const int rc =
            v_->post_srq_recv(srq_, rec->buf, rec->len, rec->lkey, w.wr_id);
        srq_lock_.unlock();
        if (rc != 0)
          util::throw_fatal("ibv backend: ibv_post_srq_recv failed: ",
                            std::strerror(rc));
      } else {
        c.kind = cqe_t::kind_t::recv;
        c.ctx = rec->ctx;
        c.length = w.len;
        c.rank = qps_.rank_of(w.qpn);
        srq_posted_.fetch_sub(1, std::memory_order_relaxed);
        util::spin_guard_t g(free_lock_);
        free_.push_back(rec);
      }
      out[k++] = c;
      continue;
    }
    credits_.fetch_add(1, std::memory_order_release);
    const uint64_t tag = w.wr_id & 3;
    c.ctx = reinterpret_cast<void*>(w.wr_id & ~uint64_t(3));
    if (tag == tag_internal && !w.error) continue;  // an inline send done
    c.kind = tag == tag_write  ? cqe_t::kind_t::write
             : tag == tag_read ? cqe_t::kind_t::read
                               : cqe_t::kind_t::send;
    out[k++] = c;
  }
  return k;
}

std::string ibv_device_t::debug_state()
{
  int rts = 0;
  for (int r = 0; r < rank_n_; ++r) rts += qps_.state(r) == qp_state_t::rts;
  const port_t& p = v_->port();
  return std::string("ibv ") + v_->name() + " " + p.device + ":" +
         std::to_string(p.port) + " qps rts " + std::to_string(rts) + "/" +
         std::to_string(rank_n_) + " srq posted " +
         std::to_string(srq_posted_.load()) + " cq credits " +
         std::to_string(credits_.load());
}

}  // namespace lci::net::ibv
