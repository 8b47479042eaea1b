// The combining backend. See hybrid.hpp and docs/ARCHITECTURE.md "The
// hybrid backend".
//
// Routing: a post names its peer rank; index_[rank] says whether the rank
// is on this node (its index in the local backend) or not (-1: the remote
// backend, under its own rank). Every virtual of net_device_t is forwarded
// in one line through pick(); a new one is added the same way. Each route
// reports the limits of the side that serves it (route()).
//
// Receives: messages arrive on either sub-device, each in its own way. A
// side that hands messages over in place (native shm: needs_recvs false)
// gets no receive buffers; the device needs them when a side that serves
// some rank does, and they all go to that side. When both sides need them,
// a post_recv goes to the side that holds fewer outstanding receives
// (posted minus completed), so neither side can be starved by the other
// holding every buffer: with traffic on one side only, both settle near
// half. release() goes to both sides (each ignores a batch it lent
// nothing in).
//
// Memory: a registration is made with both contexts. Its rma_base is the
// virtual address (what the native shm backend needs); its key and local
// descriptor are the remote backend's (the native backend lists the region
// under that key, register_memory_key, and needs no descriptor). A write or
// read to a remote peer passes base 0 instead when the remote backend addresses
// registrations by offset (caps_t::rma_virtual false; the built-in ones all
// take the virtual address, libfabric turning it into an offset itself for
// providers without FI_MR_VIRT_ADDR), so the same rmr works on both paths:
// the offset travels apart from the base (net::remote_t).
#include "net/hybrid/hybrid.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>

#include "util/error.hpp"
#include "util/log.hpp"

namespace lci::net::hybrid
{
namespace
{

struct path_t {
  net_device_t* dev;
  int rank;     // the peer's number in that backend
  bool remote;  // the remote backend
};

struct shared_t {
  std::vector<int> index;   // rank -> local index, or -1
  std::vector<int> global;  // local index -> rank
  bool any_remote = false;
  bool remote_virtual = false;  // the remote backend's caps().rma_virtual
  std::string remote_name;      // the remote backend's caps().backend
};

class hybrid_device_t final : public net_device_t
{
 public:
  hybrid_device_t(std::unique_ptr<net_device_t> local,
                  std::unique_ptr<net_device_t> remote, const shared_t& s)
      : local_(std::move(local)), remote_(std::move(remote)), s_(s)
  {
  }

  // [2-byte length of the local address][local address][remote address]
  std::string get_address() override
  {
    const std::string a = local_->get_address();
    const std::string b = remote_->get_address();
    std::string out;
    out += static_cast<char>(a.size() & 0xff);
    out += static_cast<char>(a.size() >> 8);
    return out + a + b;
  }

  void connect(const std::vector<std::string>& addrs) override
  {
    if (addrs.size() != s_.index.size())
      util::throw_fatal("alloc_device: ", addrs.size(), " addresses for ",
                        s_.index.size(), " ranks");
    std::vector<std::string> local(s_.global.size()), remote(addrs.size());
    for (size_t r = 0; r < addrs.size(); ++r) {
      const std::string& a = addrs[r];
      size_t len =
          a.size() >= 2
              ? static_cast<unsigned char>(a[0]) |
                    static_cast<size_t>(static_cast<unsigned char>(a[1])) << 8
              : 0;
      if (a.size() < 2 || a.size() - 2 < len)
        util::throw_fatal("alloc_device: rank ", r,
                          " sent no hybrid address (is its LCI_ATTR_BACKEND "
                          "hybrid or auto too, with the same "
                          "LCI_ATTR_SHM_NODE_SPLIT?)");
      if (s_.index[r] >= 0) local[s_.index[r]] = a.substr(2, len);
      remote[r] = a.substr(2 + len);
    }
    local_->connect(local);
    remote_->connect(remote);
    local_recvs_.needed = local_->needs_recvs();
    remote_recvs_.needed = s_.any_remote && remote_->needs_recvs();
    if (util::log_enabled(util::log_level_t::debug))
      for (size_t r = 0; r < addrs.size(); ++r)
        LCI_LOG(debug, "hybrid: rank ", r, " through ",
                s_.index[r] >= 0 ? "native shm (same node)"
                                 : s_.remote_name + " (another node)");
  }

  void connected() override
  {
    local_->connected();
    remote_->connected();
  }

  route_caps_t route(int rank) override
  {
    path_t t = pick(rank);
    return t.dev->route(t.rank);
  }

  error_t send_copy(int rank, const void* head, size_t hlen, const void* tail,
                    size_t tlen) override
  {
    path_t t = pick(rank);
    return t.dev->send_copy(t.rank, head, hlen, tail, tlen);
  }

  error_t post_send(int rank, const void* buf, size_t size, void* ctx) override
  {
    path_t t = pick(rank);
    return t.dev->post_send(t.rank, buf, size, ctx);
  }

  error_t post_send_network(int rank, const void* buf, size_t size,
                            void* ctx) override
  {
    path_t t = pick(rank);
    return t.dev->post_send_network(t.rank, buf, size, ctx);
  }

  bool needs_recvs() override
  {
    return local_recvs_.needed || remote_recvs_.needed;
  }

  error_t post_recv(void* buf, size_t size, void* ctx) override
  {
    // every peer on this node: a raw receive can only be the local side's
    if (!s_.any_remote) return local_->post_recv(buf, size, ctx);
    const bool remote = !local_recvs_.needed ||
                        (remote_recvs_.needed && outstanding(remote_recvs_) <
                                                     outstanding(local_recvs_));
    recvs_t& c = remote ? remote_recvs_ : local_recvs_;
    error_t e = (remote ? remote_ : local_)->post_recv(buf, size, ctx);
    if (e.is_posted()) c.posted.fetch_add(1, std::memory_order_relaxed);
    return e;
  }

  error_t post_write(int rank, const void* buf, size_t size, void* desc,
                     const remote_t& remote, void* ctx, bool delivered) override
  {
    path_t t = pick(rank);
    return t.dev->post_write(t.rank, buf, size, desc, address(t, remote), ctx,
                             delivered);
  }

  error_t post_writeimm(int rank, const void* buf, size_t size, void* desc,
                        const remote_t& remote, uint64_t imm,
                        void* ctx) override
  {
    path_t t = pick(rank);
    return t.dev->post_writeimm(t.rank, buf, size, desc, address(t, remote),
                                imm, ctx);
  }

  error_t post_read(int rank, void* buf, size_t size, void* desc,
                    const remote_t& remote, void* ctx) override
  {
    path_t t = pick(rank);
    return t.dev->post_read(t.rank, buf, size, desc, address(t, remote), ctx);
  }

  // The local side at every call. The remote side while it returns
  // completions, else once the time its last poll took has passed again:
  // an idle network poll is not free (libfabric tcp runs its progress
  // engine, about a microsecond here; its shm provider a small fraction),
  // and node-local traffic would pay it on every poll; so an idle device
  // spends at most about half its polling time on the remote side, whatever
  // the provider. When both are polled the order alternates, so neither
  // starves the other of completion slots.
  // Both sides may hand messages over in the scratch buffer: the second
  // side polled gets what the first left free (past the end of the last
  // message it placed there).
  size_t poll_comp(cqe_t* out, size_t max, char* scratch,
                   size_t scratch_size) override
  {
    const uint32_t turn = turn_.load(std::memory_order_relaxed);
    turn_.store(turn + 1, std::memory_order_relaxed);
    const bool poll_remote =
        remote_busy_.load(std::memory_order_relaxed) ||
        now_ns() >= next_remote_.load(std::memory_order_relaxed);
    size_t n = 0;
    try {
      poll_both(out, max, scratch, scratch_size, poll_remote, turn, &n);
    } catch (...) {
      // what the other side lent is not handed over: back at once
      release(out, max);
      throw;
    }
    return n;
  }

  void poll_both(cqe_t* out, size_t max, char* scratch, size_t scratch_size,
                 bool poll_remote, uint32_t turn, size_t* pn)
  {
    size_t n = 0;
    size_t used = 0;  // scratch bytes the first side's messages took
    for (int i = 0; i < 2 && n < max; ++i) {
      const bool remote = (i == 0) == ((turn & 1) != 0);
      if (remote && !poll_remote) continue;
      const int64_t t0 = remote ? now_ns() : 0;
      net_device_t* side = remote ? remote_.get() : local_.get();
      const size_t got =
          side->poll_comp(out + n, max - n, scratch ? scratch + used : nullptr,
                          scratch ? scratch_size - used : 0);
      for (size_t k = n; k < n + got; ++k) {
        fix(&out[k], remote);
        if (out[k].kind != cqe_t::kind_t::message || !scratch) continue;
        // (a message lent in the backend's memory takes no scratch)
        const auto at = reinterpret_cast<uintptr_t>(out[k].ctx) -
                        reinterpret_cast<uintptr_t>(scratch);
        if (at < scratch_size)
          used =
              std::max<size_t>(used, (at + out[k].length + 15) & ~size_t(15));
      }
      if (used > scratch_size) used = scratch_size;
      n += got;
      if (remote) {
        const int64_t t1 = now_ns();
        next_remote_.store(t1 + (t1 - t0), std::memory_order_relaxed);
        remote_busy_.store(got > 0, std::memory_order_relaxed);
      }
      *pn = n;
    }
  }

  void release(const cqe_t* batch, size_t n) override
  {
    local_->release(batch, n);
    remote_->release(batch, n);
  }

  // only the local side lends (the remote one lands messages in posted
  // receives, or in the scratch buffer)
  const std::atomic<const cqe_t*>* loan_marker() override
  {
    return local_->loan_marker();
  }

  // work either part still does for peers on its own (the native part's
  // fallback reads for a peer's get): the device is not drained until both
  // are done
  bool busy() override { return local_->busy() || remote_->busy(); }

  // "local ranks 0 2; local {...} remote {...}": the ranks reached
  // through the local backend, then each side's own summary
  std::string debug_state() override
  {
    std::string s = "local ranks";
    for (int r : s_.global) s += " " + std::to_string(r);
    return s + "; local {" + local_->debug_state() + "} remote {" +
           remote_->debug_state() + "}";
  }

 private:
  struct alignas(64) recvs_t {
    std::atomic<int64_t> posted{0};
    std::atomic<int64_t> completed{0};
    bool needed = true;  // the side needs receive buffers (after connect)
  };

  static int64_t outstanding(const recvs_t& c)
  {
    return c.posted.load(std::memory_order_relaxed) -
           c.completed.load(std::memory_order_relaxed);
  }

  path_t pick(int rank) const
  {
    const int l = s_.index[static_cast<size_t>(rank)];
    if (l >= 0) return path_t{local_.get(), l, false};
    return path_t{remote_.get(), rank, true};
  }

  // the target address as the chosen backend understands it
  remote_t address(const path_t& t, remote_t a) const
  {
    if (t.remote && !s_.remote_virtual) a.base = 0;
    return a;
  }

  // a completion of one side, in this device's terms
  void fix(cqe_t* c, bool remote)
  {
    if (c->kind == cqe_t::kind_t::recv)
      (remote ? remote_recvs_ : local_recvs_)
          .completed.fetch_add(1, std::memory_order_relaxed);
    if (!remote && c->rank >= 0 &&
        static_cast<size_t>(c->rank) < s_.global.size())
      c->rank = s_.global[static_cast<size_t>(c->rank)];
  }

  std::unique_ptr<net_device_t> local_;
  std::unique_ptr<net_device_t> remote_;
  const shared_t& s_;
  static int64_t now_ns()
  {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  std::atomic<uint32_t> turn_{0};
  std::atomic<int64_t> next_remote_{0};   // poll the remote side from then
  std::atomic<bool> remote_busy_{false};  // the last remote poll found some
  recvs_t local_recvs_;
  recvs_t remote_recvs_;
};

// the weaker of two completion levels (caps_t::network_completion)
std::string weaker(const std::string& a, const std::string& b)
{
  auto level = [](const std::string& s) {
    return s == "delivery" ? 2 : s == "transmit" ? 1 : 0;
  };
  return level(a) <= level(b) ? a : b;
}

class hybrid_context_t final : public context_t
{
 public:
  hybrid_context_t(std::unique_ptr<context_t> local,
                   std::unique_ptr<context_t> remote, std::vector<int> index)
      : local_(std::move(local)), remote_(std::move(remote))
  {
    s_.index = std::move(index);
    for (size_t r = 0; r < s_.index.size(); ++r) {
      if (s_.index[r] < 0) {
        s_.any_remote = true;
        continue;
      }
      if (static_cast<size_t>(s_.index[r]) != s_.global.size())
        util::throw_fatal("alloc_runtime: node-local ranks misnumbered");
      s_.global.push_back(static_cast<int>(r));
    }
    const caps_t& a = local_->caps();
    const caps_t& b = remote_->caps();
    s_.remote_virtual = b.rma_virtual;
    s_.remote_name = b.backend;
    // what the core may rely on for every peer
    caps_.backend = "hybrid";
    caps_.provider = a.provider + "+" + b.provider;
    caps_.ofi_provider = b.ofi_provider;
    caps_.ofi_domain = b.ofi_domain;
    caps_.max_inject_size = std::min(a.max_inject_size, b.max_inject_size);
    caps_.max_msg_size = std::min(a.max_msg_size, b.max_msg_size);
    caps_.network_completion =
        weaker(a.network_completion, b.network_completion);
    caps_.rma = a.rma && b.rma;
    caps_.imm_data_size = std::min(a.imm_data_size, b.imm_data_size);
    caps_.mr_local = a.mr_local || b.mr_local;
    // rma_base is the virtual address (the local backend's), see the top
    caps_.rma_virtual = true;
  }

  std::unique_ptr<net_device_t> alloc_device(const device_attr_t& attr) override
  {
    std::unique_ptr<net_device_t> l = local_->alloc_device(attr);
    std::unique_ptr<net_device_t> r = remote_->alloc_device(attr);
    return std::make_unique<hybrid_device_t>(std::move(l), std::move(r), s_);
  }

  net_mr_t register_memory(void* buf, size_t size, const char* call) override
  {
    auto* h = new handle_t;
    try {
      // the remote backend's key is the one peers present, also on the
      // local path: the local backend lists the region under it
      h->remote = remote_->register_memory(buf, size, call);
      try {
        h->local = local_->register_memory_key(buf, size, call, h->remote.rkey);
      } catch (...) {
        remote_->deregister_memory(&h->remote);
        throw;
      }
    } catch (...) {
      delete h;
      throw;
    }
    nregistered_.fetch_add(1, std::memory_order_relaxed);
    net_mr_t out;
    out.desc = h->remote.desc;
    out.rkey = h->remote.rkey;
    out.rma_base = h->local.rma_base;
    out.handle = h;
    return out;
  }

  void deregister_memory(net_mr_t* mr) override
  {
    if (auto* h = static_cast<handle_t*>(mr->handle)) {
      local_->deregister_memory(&h->local);
      remote_->deregister_memory(&h->remote);
      delete h;
      nregistered_.fetch_sub(1, std::memory_order_relaxed);
    }
    *mr = net_mr_t();
  }

 private:
  struct handle_t {
    net_mr_t local, remote;
  };

  std::unique_ptr<context_t> local_;
  std::unique_ptr<context_t> remote_;
  shared_t s_;  // outlives the devices (the runtime frees them first)
};

}  // namespace

std::unique_ptr<context_t> alloc_context(std::unique_ptr<context_t> local,
                                         std::unique_ptr<context_t> remote,
                                         std::vector<int> local_index)
{
  return std::make_unique<hybrid_context_t>(std::move(local), std::move(remote),
                                            std::move(local_index));
}

}  // namespace lci::net::hybrid
