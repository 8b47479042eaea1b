#include "core/transfer.hpp"

#include <memory>

#include "core/peer_failure.hpp"
#include "resource/device.hpp"

namespace lci
{

namespace
{
error_t post_to_backend(device_impl_t* dev, const transfer_plan_t& plan,
                        char* buf, size_t len, const net::remote_t& remote,
                        transfer_op_t* op)
{
  switch (plan.kind) {
    case transfer_plan_t::kind_t::write:
      return dev->net.post_write(plan.rank, buf, len, plan.desc, remote, op,
                                 plan.delivered);
    case transfer_plan_t::kind_t::writeimm:
      return dev->net.post_writeimm(plan.rank, buf, len, plan.desc, remote,
                                    plan.imm, op);
    case transfer_plan_t::kind_t::read:
    default:
      return dev->net.post_read(plan.rank, buf, len, plan.desc, remote, op);
  }
}
}  // namespace

error_t post_fragment(device_impl_t* dev, const transfer_plan_t& plan, size_t i,
                      transfer_op_t* op)
{
  const size_t off = i * plan.frag;
  const size_t len = plan.size - off < plan.frag ? plan.size - off : plan.frag;
  net::remote_t remote = plan.remote;
  remote.disp += off;
  error_t e = post_to_backend(dev, plan, plan.local + off, len, remote, op);
  if (e.is_done()) {
    // finished in the call (a CMA copy): its completion now, as progress
    // would give it, with no cqe to wait for
    net::cqe_t c{};
    c.kind = plan.kind == transfer_plan_t::kind_t::read
                 ? net::cqe_t::kind_t::read
                 : net::cqe_t::kind_t::write;
    c.ctx = op;
    c.rank = plan.rank;
    op->transfer_done(c);
    return errorcode_t::posted;
  }
  return e;
}

void post_fragments(device_impl_t* dev, const transfer_plan_t& plan,
                    size_t first, transfer_op_t* op)
{
  const size_t n = plan.nfrags();
  size_t i = first;
  if (dev->backlog.empty()) {
    for (; i < n; ++i)
      if (post_fragment(dev, plan, i, op).is_retry()) break;
    if (i == n) return;
  }
  // the rest, one backlog entry that resumes where it stopped
  auto next = std::make_shared<size_t>(i);
  dev->backlog.push([dev, plan, next, n, op]() -> error_t {
    // the target failed: the operation was failed with it (its object is
    // kept by the runtime); the rest is never posted
    if (peer_is_failed(dev->runtime, plan.rank)) return errorcode_t::done;
    for (; *next < n; ++*next) {
      error_t e = post_fragment(dev, plan, *next, op);
      if (e.is_retry()) return e;
    }
    return errorcode_t::done;
  });
}

}  // namespace lci
