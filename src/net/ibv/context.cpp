#include "net/ibv/context.hpp"

#include <sys/resource.h>

#include "net/ibv/device.hpp"
#include "net/ibv/ibv.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace lci::net::ibv
{
namespace
{

// Registrations pin memory: the packet pool at least, plus the queues. A
// limit below that fails at the first registration with a bare ENOMEM, so
// say it up front, with the number to ask for.
void check_memlock(const runtime_attr_t& attr)
{
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
    return;
  const uint64_t need_kib =
      (static_cast<uint64_t>(attr.npackets) * attr.packet_size >> 10) +
      16 * 1024;
  if (rl.rlim_cur / 1024 >= need_kib) return;
  util::throw_fatal(
      "alloc_runtime: backend ibv: the locked-memory limit (ulimit -l) is ",
      rl.rlim_cur / 1024, " KiB, and RDMA registrations pin at least ",
      need_kib,
      " KiB (the packet pool, npackets x packet_size, and the queues): run "
      "with `ulimit -l unlimited` (or at least ulimit -l ",
      need_kib,
      "); for every login, memlock in /etc/security/limits.conf; under "
      "Slurm, also the slurmd's own limit (LimitMEMLOCK=infinity)");
}

}  // namespace

ibv_context_t::ibv_context_t(const runtime_attr_t& attr, int rank_me,
                             int rank_n)
    : rank_me_(rank_me),
      rank_n_(rank_n),
      lazy_(static_cast<size_t>(rank_n) > attr.ibv_lazy_connect_threshold)
{
  open_attr_t oa;
  oa.gid_idx = attr.ibv_gid_idx;
  oa.force_gid_auto_select = attr.ibv_force_gid_auto_select;
  std::string why;
  verbs_ = open_verbs(oa, &why);
  if (!verbs_)
    util::throw_fatal("alloc_runtime: backend ibv: ", why,
                      ". Choose another backend (LCI_ATTR_BACKEND=ofi, shm "
                      "or auto)");
  const port_t& p = verbs_->port();
  const attr_ibv_odp_strategy_t odp = attr.ibv_odp_strategy;
  bool explicit_odp = false;
  const mr_t* implicit = nullptr;
  if (odp == attr_ibv_odp_strategy_t::implicit_odp && p.odp_implicit) {
    implicit_ = verbs_->reg_mr(nullptr, SIZE_MAX, true);
    if (implicit_.handle) implicit = &implicit_;
  } else if (odp == attr_ibv_odp_strategy_t::explicit_odp && p.odp_explicit) {
    explicit_odp = true;
  }
  if (odp != attr_ibv_odp_strategy_t::none && !implicit && !explicit_odp) {
    LCI_LOG(info, "ibv backend: ", p.device, " offers no ",
            get_attr_ibv_odp_strategy_str(odp),
            " for RC: pinned registrations (ibv_odp_strategy none)");
  }
  if (p.pins_memory && !implicit && !explicit_odp) check_memlock(attr);
  cache_ = std::make_unique<reg_cache_t>(verbs_.get(), attr.ibv_reg_cache,
                                         explicit_odp, implicit,
                                         attr.ibv_prefetch_strategy);
  caps_.backend = "ibv";
  caps_.provider = p.device + ":" + std::to_string(p.port);
  caps_.max_inject_size = p.max_inline;
  caps_.max_msg_size = p.max_msg;
  // an RC send completes once the responder acknowledged it
  caps_.network_completion = "transmit";
  caps_.rma = true;
  caps_.imm_data_size = 4;
  caps_.mr_local = true;
  caps_.rma_virtual = true;
  LCI_LOG(debug, "ibv backend: ", verbs_->name(), " device ", p.device,
          " port ", p.port, p.roce ? " (RoCE, GID " : " (InfiniBand, GID ",
          p.gid_idx, "), lid ", p.lid, ", max inline ", p.max_inline,
          lazy_ ? ", queue pairs to RTS on first use" : "");
}

ibv_context_t::~ibv_context_t()
{
  cache_.reset();
  if (implicit_.handle) verbs_->dereg_mr(implicit_);
}

std::unique_ptr<net_device_t> ibv_context_t::alloc_device(
    const device_attr_t& attr)
{
  return std::make_unique<ibv_device_t>(*this, attr);
}

net_mr_t ibv_context_t::register_memory(void* buf, size_t size,
                                        const char* call)
{
  const reg_cache_t::entry_t* e = cache_->acquire(buf, size, call);
  nregistered_.fetch_add(1, std::memory_order_relaxed);
  net_mr_t out;
  out.desc = const_cast<reg_cache_t::entry_t*>(e);
  out.handle = out.desc;
  // The core tells registrations apart by key, and a cached or implicit
  // registration serves several: the key a peer presents carries a serial
  // number of this registration above the device's 32-bit rkey (the
  // backend posts only the low half).
  const uint64_t serial = next_serial_.fetch_add(1, std::memory_order_relaxed);
  out.rkey = (serial << 32) | e->mr.rkey;
  out.rma_base = reinterpret_cast<uintptr_t>(buf);
  return out;
}

void ibv_context_t::deregister_memory(net_mr_t* mr)
{
  if (mr->handle) {
    cache_->release(static_cast<const reg_cache_t::entry_t*>(mr->handle));
    nregistered_.fetch_sub(1, std::memory_order_relaxed);
  }
  *mr = net_mr_t();
}

std::unique_ptr<context_t> alloc_context(const runtime_attr_t& attr,
                                         int rank_me, int rank_n)
{
  return std::make_unique<ibv_context_t>(attr, rank_me, rank_n);
}

bool usable(std::string* why)
{
  static const std::string reason = [] {
    std::string w;
    std::unique_ptr<verbs_t> v = open_verbs(open_attr_t{}, &w);
    return v ? std::string() : w;
  }();
  if (why) *why = reason;
  return reason.empty();
}

}  // namespace lci::net::ibv
