// The raw network layer (upstream LCI 2's net_post_* and net_poll_cq): each
// operation goes straight to the device's backend endpoint (net::link_t),
// with none of the library's protocols: no wire header, no matching, no
// packets. The peer must use the raw layer too: what it receives is the
// bytes sent, nothing more.
//
// A device is either the library's or raw. A raw receive needs a device
// that pre-posts none of its own (net_max_recvs 0, or the runtime's default
// device with alloc_default_packet_pool false), else the peer's messages
// would land in the library's packets; net_poll_cq passes the backend no
// scratch buffer, so every message lands in a posted receive.
//
// What the backend completes inside the posting call (native shm copies a
// send into the peer's ring at once) is still reported by net_poll_cq, as
// upstream's backends do, through the device's list of such completions
// (resource/raw_net.hpp), which net_poll_cq empties first.
#include <cstdlib>
#include <cstring>

#include "resource/device.hpp"
#include "resource/endpoint.hpp"
#include "resource/mr.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

const char* get_net_opcode_str(net_opcode_t opcode)
{
  switch (opcode) {
    case net_opcode_t::SEND:
      return "SEND";
    case net_opcode_t::RECV:
      return "RECV";
    case net_opcode_t::WRITE:
      return "WRITE";
    case net_opcode_t::REMOTE_WRITE:
      return "REMOTE_WRITE";
    case net_opcode_t::READ:
      return "READ";
    case net_opcode_t::ERROR:
      return "ERROR";
  }
  return "unknown";
}

namespace
{

struct raw_call_t {
  runtime_impl_t* rt;
  device_impl_t* dev;
};

raw_call_t resolve_raw(runtime_t runtime, device_t device, endpoint_t endpoint,
                       const char* call)
{
  rt_dev_t r =
      resolve_device(runtime, endpoint_device(endpoint, device, call), call);
  if (!r.dev->raw.in_use()) r.dev->raw.mark();
  return {r.rt, r.dev};
}

void check_buffer(const char* call, const void* buffer, size_t size)
{
  if (!buffer && size != 0)
    util::throw_fatal(call, ": null buffer with size ", size);
}

void check_rank(const raw_call_t& c, const char* call, int rank)
{
  if (rank < 0 || rank >= c.rt->rank_n)
    util::throw_fatal(call, ": rank ", rank, " is outside [0, ", c.rt->rank_n,
                      ")");
}

// The registration's descriptor for buffer (null for none): a given
// registration must cover the buffer; a backend that needs descriptors
// needs one.
void* local_desc(const raw_call_t& c, const char* call, mr_t mr,
                 const void* buffer, size_t size)
{
  mr_impl_t* m = checked_mr(mr, c.rt, call);
  if (m && size != 0 && !m->covers(buffer, size))
    util::throw_fatal(call, ": the registration (",
                      static_cast<void*>(m->address), ", ", m->size,
                      " bytes) does not cover the buffer ", buffer, " of ",
                      size, " bytes");
  if (!m && c.rt->net_context->caps().mr_local)
    util::throw_fatal(call, ": the ", c.rt->net_context->caps().backend,
                      " backend needs a registered buffer (register_memory)");
  return m ? m->net.desc : nullptr;
}

void check_size(const raw_call_t& c, const char* call, size_t size)
{
  const size_t max = c.rt->net_context->caps().max_msg_size;
  if (max != 0 && size > max)
    util::throw_fatal(call, ": size ", size,
                      " is above the backend's largest message, ", max);
}

void check_imm(const char* call, net_imm_data_t imm)
{
  if (imm != 0)
    util::throw_fatal(call, ": imm_data ", imm,
                      " on a message: the backends of this library carry "
                      "immediate data only with RDMA writes "
                      "(net_post_putImm); it must be 0");
}

net::remote_t remote_of(const raw_call_t& c, const char* call, int rank,
                        uint64_t offset, const rmr_t& rmr, size_t size)
{
  if (rmr.is_empty()) util::throw_fatal(call, ": empty rmr");
  check_rmr(c.rt, call, rank, rmr, offset, size);
  net::remote_t r;
  r.base = rmr.base;
  r.disp = offset;
  r.rkey = rmr.opaque_rkey;
  return r;
}

// What a posting call returns for the backend's answer `e` on operation
// `op`: done becomes posted plus a completion for net_poll_cq (`report`),
// or stays done without one (an inject); retry frees the record.
error_t finish(device_impl_t* dev, raw_op_t* op, error_t e, bool report)
{
  if (e.is_retry()) {
    raw_op_t::drop(op->tagged());
    return e;
  }
  if (e.is_done()) {
    if (report)
      dev->raw.push(
          net_status_t{op->opcode, op->rank, op->user_context, op->size, 0});
    raw_op_t::drop(op->tagged());
    return report ? errorcode_t::posted : errorcode_t::done;
  }
  return e;
}

raw_op_t* new_op(net_opcode_t opcode, int rank, void* user_context, size_t size)
{
  return new raw_op_t{opcode, rank, user_context, size};
}

// A write of `size` bytes from buffer; `copy`: from a copy of it (the
// inject forms), so that the post is done at once.
error_t raw_write(const char* call, runtime_t runtime, device_t device,
                  endpoint_t endpoint, int rank, void* buffer, size_t size,
                  mr_t mr, uint64_t offset, const rmr_t& rmr,
                  void* user_context, bool imm, net_imm_data_t imm_data,
                  bool copy)
{
  raw_call_t c = resolve_raw(runtime, device, endpoint, call);
  void* desc = copy ? nullptr : local_desc(c, call, mr, buffer, size);
  check_rank(c, call, rank);
  check_buffer(call, buffer, size);
  check_size(c, call, size);
  const net::caps_t& caps = c.rt->net_context->caps();
  if (copy && size > c.rt->attr.max_inject_size)
    util::throw_fatal(call, ": size ", size, " is above max_inject_size ",
                      c.rt->attr.max_inject_size, " (net_post_put",
                      imm ? "Imm" : "", " takes any size)");
  const net::remote_t remote = remote_of(c, call, rank, offset, rmr, size);
  if (!caps.rma)
    util::throw_fatal(call, ": the ", caps.backend,
                      " backend has no RDMA writes");
  if (imm && caps.imm_data_size < sizeof(net_imm_data_t))
    util::throw_fatal(call, ": the ", caps.backend,
                      " backend delivers no immediate data (net context "
                      "attribute support_putimm is false)");
  if (copy) {
    if (caps.mr_local)
      util::throw_fatal(call, ": the ", caps.backend,
                        " backend needs registered buffers; use net_post_put",
                        imm ? "Imm" : "");
  }
  if (size == 0 && !imm) {
    // nothing to move: complete now
    if (copy) return errorcode_t::done;
    c.dev->raw.push(
        net_status_t{net_opcode_t::WRITE, rank, user_context, 0, 0});
    return errorcode_t::posted;
  }
  raw_op_t* op = new_op(net_opcode_t::WRITE, rank, user_context, size);
  const void* src = buffer;
  if (copy) {
    op->staging = std::malloc(size ? size : 1);
    if (!op->staging) {
      delete op;
      util::throw_fatal(call, ": out of memory for a ", size, "-byte copy");
    }
    if (size) std::memcpy(op->staging, buffer, size);
    src = op->staging;
  }
  error_t e = imm ? c.dev->net.post_writeimm(rank, src, size, desc, remote,
                                             imm_data, op->tagged())
                  : c.dev->net.post_write(rank, src, size, desc, remote,
                                          op->tagged(), false);
  // its completion frees the copy, reported only if it failed
  if (copy && e.is_posted()) return errorcode_t::done;
  return finish(c.dev, op, e, !copy);
}

}  // namespace

size_t net_poll_cq_x::call_impl(size_t max_polls, net_status_t* statuses,
                                runtime_t runtime, device_t device)
{
  const char* call = "net_poll_cq";
  raw_call_t c = resolve_raw(runtime, device, endpoint_t(), call);
  size_t n = c.dev->raw.pop(statuses, max_polls);
  constexpr size_t kBatch = 16;
  net::cqe_t cqes[kBatch];
  while (n < max_polls) {
    const size_t want = std::min(kBatch, max_polls - n);
    // no scratch: every message lands in a posted receive
    const size_t got = c.dev->net.poll(cqes, want, nullptr, 0);
    for (size_t i = 0; i < got; ++i) {
      const net::cqe_t& q = cqes[i];
      net_status_t s{net_opcode_t::REMOTE_WRITE, -1, nullptr, 0, 0};
      if (q.kind == net::cqe_t::kind_t::remote_write) {
        if (q.error) {
          s.opcode = net_opcode_t::ERROR;
          s.rank = q.rank;
        } else {
          s.imm_data = static_cast<net_imm_data_t>(q.imm);
        }
      } else if (q.kind == net::cqe_t::kind_t::message ||
                 !raw_op_t::is_tagged(q.ctx)) {
        // the library's own traffic on this device: a message that took
        // none of the posted receives, or one of its packets
        util::throw_fatal(
            call,
            ": a completion of the library's own traffic (a pre-posted "
            "packet receive or a post_* operation): raw operations need a "
            "device of their own, allocated with net_max_recvs(0) (or the "
            "runtime with alloc_default_packet_pool(false)), which nothing "
            "else progresses");
      } else {
        raw_op_t* op = raw_op_t::untag(q.ctx);
        if (op->staging && !q.error) {
          // an inject write's copy: done already, nothing to report
          raw_op_t::drop(q.ctx);
          continue;
        }
        s.opcode = q.error ? net_opcode_t::ERROR : op->opcode;
        // a receive: the sender, as the backend reports it
        s.rank = op->opcode == net_opcode_t::RECV ? q.rank : op->rank;
        s.user_context = op->user_context;
        s.length = op->opcode == net_opcode_t::RECV ? q.length : op->size;
        if (q.error) {
          // as upstream: the backend's peer rank when it knows it; a
          // failed receive names no rank and no context
          if (q.rank >= 0) s.rank = q.rank;
          if (op->opcode == net_opcode_t::RECV) {
            s.rank = -1;
            s.user_context = nullptr;
          }
          s.length = 0;
        }
        raw_op_t::drop(q.ctx);
      }
      if (statuses) statuses[n] = s;
      ++n;
    }
    if (got < want) break;
  }
  return n;
}

error_t net_post_recv_x::call_impl(void* buffer, size_t size, mr_t mr,
                                   runtime_t runtime, device_t device,
                                   void* user_context)
{
  const char* call = "net_post_recv";
  raw_call_t c = resolve_raw(runtime, device, endpoint_t(), call);
  check_buffer(call, buffer, size);
  if (c.dev->attr.net_max_recvs != 0)
    util::throw_fatal(call, ": the device pre-posts ",
                      c.dev->attr.net_max_recvs,
                      " receives of its own (net_max_recvs): a raw receive "
                      "needs a device allocated with net_max_recvs(0), or "
                      "the runtime's default device with "
                      "alloc_default_packet_pool(false)");
  void* desc = local_desc(c, call, mr, buffer, size);
  (void)desc;  // the backend interface's receives take none
  raw_op_t* op = new_op(net_opcode_t::RECV, -1, user_context, size);
  return finish(c.dev, op, c.dev->net.post_recv(buffer, size, op->tagged()),
                true);
}

error_t net_post_sends_x::call_impl(int rank, void* buffer, size_t size,
                                    runtime_t runtime, device_t device,
                                    endpoint_t endpoint, void* user_context,
                                    net_imm_data_t imm_data)
{
  (void)user_context;  // done at once: nothing reports it
  const char* call = "net_post_sends";
  raw_call_t c = resolve_raw(runtime, device, endpoint, call);
  check_rank(c, call, rank);
  check_buffer(call, buffer, size);
  check_imm(call, imm_data);
  const size_t max = c.dev->net.copy_limit(rank);
  if (size > max)
    util::throw_fatal(call, ": size ", size, " is above the inject limit ", max,
                      " to rank ", rank, " (net_post_send takes any size)");
  return c.dev->net.send_copy(rank, buffer, size, nullptr, 0);
}

error_t net_post_send_x::call_impl(int rank, void* buffer, size_t size, mr_t mr,
                                   runtime_t runtime, device_t device,
                                   endpoint_t endpoint, void* user_context,
                                   net_imm_data_t imm_data)
{
  const char* call = "net_post_send";
  raw_call_t c = resolve_raw(runtime, device, endpoint, call);
  check_rank(c, call, rank);
  check_buffer(call, buffer, size);
  check_imm(call, imm_data);
  check_size(c, call, size);
  (void)local_desc(c, call, mr, buffer, size);
  raw_op_t* op = new_op(net_opcode_t::SEND, rank, user_context, size);
  return finish(c.dev, op,
                c.dev->net.post_send(rank, buffer, size, op->tagged()), true);
}

error_t net_post_puts_x::call_impl(int rank, void* buffer, size_t size,
                                   uint64_t offset, rmr_t rmr,
                                   runtime_t runtime, device_t device,
                                   endpoint_t endpoint, void* user_context)
{
  return raw_write("net_post_puts", runtime, device, endpoint, rank, buffer,
                   size, mr_t(), offset, rmr, user_context, false, 0, true);
}

error_t net_post_put_x::call_impl(int rank, void* buffer, size_t size, mr_t mr,
                                  uint64_t offset, rmr_t rmr, runtime_t runtime,
                                  device_t device, endpoint_t endpoint,
                                  void* user_context)
{
  return raw_write("net_post_put", runtime, device, endpoint, rank, buffer,
                   size, mr, offset, rmr, user_context, false, 0, false);
}

error_t net_post_putImms_x::call_impl(int rank, void* buffer, size_t size,
                                      uint64_t offset, rmr_t rmr,
                                      runtime_t runtime, device_t device,
                                      endpoint_t endpoint, void* user_context,
                                      net_imm_data_t imm_data)
{
  return raw_write("net_post_putImms", runtime, device, endpoint, rank, buffer,
                   size, mr_t(), offset, rmr, user_context, true, imm_data,
                   true);
}

error_t net_post_putImm_x::call_impl(int rank, void* buffer, size_t size,
                                     mr_t mr, uint64_t offset, rmr_t rmr,
                                     runtime_t runtime, device_t device,
                                     endpoint_t endpoint, void* user_context,
                                     net_imm_data_t imm_data)
{
  return raw_write("net_post_putImm", runtime, device, endpoint, rank, buffer,
                   size, mr, offset, rmr, user_context, true, imm_data, false);
}

error_t net_post_get_x::call_impl(int rank, void* buffer, size_t size, mr_t mr,
                                  uint64_t offset, rmr_t rmr, runtime_t runtime,
                                  device_t device, endpoint_t endpoint,
                                  void* user_context)
{
  const char* call = "net_post_get";
  raw_call_t c = resolve_raw(runtime, device, endpoint, call);
  check_rank(c, call, rank);
  check_buffer(call, buffer, size);
  check_size(c, call, size);
  void* desc = local_desc(c, call, mr, buffer, size);
  const net::remote_t remote = remote_of(c, call, rank, offset, rmr, size);
  if (!c.rt->net_context->caps().rma)
    util::throw_fatal(call, ": the ", c.rt->net_context->caps().backend,
                      " backend has no RDMA reads");
  if (size == 0) {
    c.dev->raw.push(net_status_t{net_opcode_t::READ, rank, user_context, 0, 0});
    return errorcode_t::posted;
  }
  raw_op_t* op = new_op(net_opcode_t::READ, rank, user_context, size);
  return finish(
      c.dev, op,
      c.dev->net.post_read(rank, buffer, size, desc, remote, op->tagged()),
      true);
}

}  // namespace lci
