#include "net/shm/cma.hpp"
#include "net/shm/device.hpp"

namespace lci::net::shm
{

error_t shm_device_t::post_write(int rank, const void* buf, size_t size, void*,
                                 const remote_t& remote, void* ctx, bool)
{
  const uint64_t raddr = remote.base + remote.disp;
  if (refuse(rank, remote, raddr, size, cqe_t::kind_t::write, ctx))
    return errorcode_t::posted;
  if (by_cma(rank, size)) {
    // CMA copies synchronously: delivered on return
    if (cma(peers_[rank].pid, const_cast<void*>(buf), raddr, size, true))
      return errorcode_t::done;
    local_.push(cqe_t::kind_t::write, ctx, "process_vm_writev failed");
    return errorcode_t::posted;
  }
  jobs_.add(tx_job_t{rank, kWriteData, static_cast<const char*>(buf), size,
                     raddr, reinterpret_cast<uintptr_t>(ctx), 0, false});
  return errorcode_t::posted;
}

error_t shm_device_t::post_writeimm(int rank, const void* buf, size_t size,
                                    void*, const remote_t& remote, uint64_t imm,
                                    void* ctx)
{
  const uint64_t raddr = remote.base + remote.disp;
  if (refuse(rank, remote, raddr, size, cqe_t::kind_t::write, ctx))
    return errorcode_t::posted;
  if (!by_cma(rank, size)) {
    jobs_.add(tx_job_t{rank, kWriteData, static_cast<const char*>(buf), size,
                       raddr, reinterpret_cast<uintptr_t>(ctx), imm, true});
    return errorcode_t::posted;
  }
  // room for the notification first, so that a full ring is a retry
  // before any data moved
  tx_ring_t& t = tx_[rank];
  if (!t.lock.try_lock()) return errorcode_t::retry_lock;
  if (t.jobs_ahead() || !t.prod.fits(sizeof(imm))) {
    t.lock.unlock();
    return errorcode_t::retry_nomem;
  }
  bool ok = cma(peers_[rank].pid, const_cast<void*>(buf), raddr, size, true);
  if (ok) {
    t.prod.push(kImm, &imm, sizeof(imm));
    t.ring_bell();
  }
  t.lock.unlock();
  if (ok) return errorcode_t::done;
  local_.push(cqe_t::kind_t::write, ctx, "process_vm_writev failed");
  return errorcode_t::posted;
}

error_t shm_device_t::post_read(int rank, void* buf, size_t size, void*,
                                const remote_t& remote, void* ctx)
{
  const uint64_t raddr = remote.base + remote.disp;
  if (refuse(rank, remote, raddr, size, cqe_t::kind_t::read, ctx))
    return errorcode_t::posted;
  if (by_cma(rank, size)) {
    if (cma(peers_[rank].pid, buf, raddr, size, false))
      return errorcode_t::done;
    local_.push(cqe_t::kind_t::read, ctx, "process_vm_readv failed");
    return errorcode_t::posted;
  }
  read_req_t req{raddr, reinterpret_cast<uintptr_t>(buf), size,
                 reinterpret_cast<uintptr_t>(ctx)};
  return push(rank, kReadReq, &req, sizeof(req), nullptr, 0,
              errorcode_t::posted);
}

bool shm_device_t::refuse(int rank, const remote_t& remote, uint64_t raddr,
                          size_t size, cqe_t::kind_t kind, void* ctx)
{
  const char* why = cfg_.keys->check(rank, remote.rkey, raddr, size);
  if (__builtin_expect(why == nullptr, 1)) return false;
  local_.push(kind, ctx, why, true);
  return true;
}

}  // namespace lci::net::shm
