// The verbs layer over libibverbs (see verbs.hpp). Never exercised on RDMA
// hardware in this project's tests: only its "no device" path runs here.
#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "net/ibv/verbs.hpp"

namespace lci::net::ibv
{
namespace
{

const char* port_state_name(ibv_port_state s)
{
  switch (s) {
    case IBV_PORT_DOWN:
      return "DOWN";
    case IBV_PORT_INIT:
      return "INIT (no subnet manager configured it yet?)";
    case IBV_PORT_ARMED:
      return "ARMED";
    case IBV_PORT_ACTIVE:
      return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
      return "ACTIVE_DEFER";
    default:
      return "NOP";
  }
}

// An IPv4-mapped GID (::ffff:a.b.c.d): RoCE v2 routes it over IPv4.
bool ipv4_mapped(const ibv_gid& g)
{
  for (int i = 0; i < 10; ++i)
    if (g.raw[i]) return false;
  return g.raw[10] == 0xff && g.raw[11] == 0xff;
}

bool zero_gid(const ibv_gid& g)
{
  for (unsigned char b : g.raw)
    if (b) return false;
  return true;
}

// RoCE without a user's choice: a RoCE v2 IPv4-mapped GID first (routable,
// what most fabrics configure), then any RoCE v2 GID, then the first
// non-zero one; -1 when the table has none.
int auto_gid(ibv_context* ctx, int port, int table_len)
{
  int best = -1, best_rank = 0;
  for (int i = 0; i < table_len; ++i) {
    ibv_gid_entry e{};
    if (ibv_query_gid_ex(ctx, static_cast<uint32_t>(port),
                         static_cast<uint32_t>(i), &e, 0) != 0)
      continue;
    ibv_gid g;
    std::memcpy(g.raw, e.gid.raw, 16);
    if (zero_gid(g)) continue;
    int rank = 1;
    if (e.gid_type == IBV_GID_TYPE_ROCE_V2) rank = ipv4_mapped(g) ? 3 : 2;
    if (rank > best_rank) {
      best = i;
      best_rank = rank;
    }
  }
  return best;
}

class real_verbs_t final : public verbs_t
{
 public:
  ~real_verbs_t() override
  {
    if (pd_) ibv_dealloc_pd(pd_);
    if (ctx_) ibv_close_device(ctx_);
  }

  // Opens the first device with an active port; false and *why otherwise.
  bool open(const open_attr_t& attr, std::string* why)
  {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list || n == 0) {
      if (list) ibv_free_device_list(list);
      *why =
          "no RDMA device: libibverbs found none (ibv_devices lists none; "
          "is the driver loaded and /sys/class/infiniband populated?)";
      return false;
    }
    std::string down;
    for (int d = 0; d < n && !ctx_; ++d) {
      ibv_context* ctx = ibv_open_device(list[d]);
      if (!ctx) {
        down += std::string(down.empty() ? "" : "; ") +
                ibv_get_device_name(list[d]) + ": cannot open (" +
                std::strerror(errno) + ")";
        continue;
      }
      ibv_device_attr_ex dattr{};
      if (ibv_query_device_ex(ctx, nullptr, &dattr) != 0) {
        ibv_close_device(ctx);
        continue;
      }
      for (int p = 1; p <= dattr.orig_attr.phys_port_cnt; ++p) {
        ibv_port_attr pattr{};
        if (ibv_query_port(ctx, static_cast<uint8_t>(p), &pattr) != 0) continue;
        if (pattr.state != IBV_PORT_ACTIVE) {
          down += std::string(down.empty() ? "" : "; ") +
                  ibv_get_device_name(list[d]) + " port " + std::to_string(p) +
                  " is " + port_state_name(pattr.state);
          continue;
        }
        if (!use_port(ctx, dattr, pattr, p, attr, why)) {
          down += std::string(down.empty() ? "" : "; ") + *why;
          continue;
        }
        port_.device = ibv_get_device_name(list[d]);
        ctx_ = ctx;
        break;
      }
      if (!ctx_) ibv_close_device(ctx);
    }
    ibv_free_device_list(list);
    if (!ctx_) {
      *why = "no RDMA device with an active port (" + down +
             "; check the cable, the subnet manager (InfiniBand) or the "
             "link (RoCE): ibv_devinfo shows the port states)";
      return false;
    }
    pd_ = ibv_alloc_pd(ctx_);
    if (!pd_) {
      *why = "ibv_alloc_pd failed on " + port_.device + ": " +
             std::strerror(errno);
      return false;
    }
    probe_inline();
    return true;
  }

  // The inline size a queue pair really gets: ask for 236 bytes (mlx5's
  // usual figure with two gather entries), then less until the device
  // accepts, and keep what creation reports.
  void probe_inline()
  {
    ibv_cq* cq = ibv_create_cq(ctx_, 1, nullptr, nullptr, 0);
    uint32_t got = 0;
    for (uint32_t want : {236u, 128u, 64u, 0u}) {
      if (!cq) break;
      ibv_qp_init_attr a{};
      a.send_cq = a.recv_cq = cq;
      a.cap.max_send_wr = a.cap.max_recv_wr = 1;
      a.cap.max_send_sge = 2;
      a.cap.max_recv_sge = 1;
      a.cap.max_inline_data = want;
      a.qp_type = IBV_QPT_RC;
      if (ibv_qp* qp = ibv_create_qp(pd_, &a)) {
        got = a.cap.max_inline_data;
        ibv_destroy_qp(qp);
        break;
      }
    }
    if (cq) ibv_destroy_cq(cq);
    port_.max_inline = got;
  }

  const char* name() const override { return "libibverbs"; }
  const port_t& port() const override { return port_; }

  mr_t reg_mr(void* addr, size_t len, bool odp) override
  {
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                 IBV_ACCESS_REMOTE_WRITE;
    if (odp) access |= IBV_ACCESS_ON_DEMAND;
    ibv_mr* mr = ibv_reg_mr(pd_, addr, len, access);
    mr_t out;
    if (!mr) return out;
    out.handle = mr;
    out.lkey = mr->lkey;
    out.rkey = mr->rkey;
    return out;
  }

  void dereg_mr(const mr_t& mr) override
  {
    if (mr.handle) ibv_dereg_mr(static_cast<ibv_mr*>(mr.handle));
  }

  int prefetch_mr(const mr_t& mr, void* addr, size_t len, int advice) override
  {
    static const ibv_advise_mr_advice kAdvice[] = {
        IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
        IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT};
    // an sge holds at most 4 GiB - 1: one request per such piece
    constexpr size_t kPiece = size_t(1) << 30;
    char* p = static_cast<char*>(addr);
    for (size_t off = 0; off < len; off += kPiece) {
      ibv_sge sge{};
      sge.addr = reinterpret_cast<uintptr_t>(p + off);
      sge.length = static_cast<uint32_t>(std::min(kPiece, len - off));
      sge.lkey = mr.lkey;
      const int rc = ibv_advise_mr(pd_, kAdvice[advice], 0, &sge, 1);
      if (rc != 0) return rc;
    }
    return 0;
  }

  void* create_cq(int cqe) override
  {
    return ibv_create_cq(ctx_, cqe, nullptr, nullptr, 0);
  }
  void destroy_cq(void* cq) override
  {
    if (cq) ibv_destroy_cq(static_cast<ibv_cq*>(cq));
  }

  void* create_srq(int max_wr) override
  {
    ibv_srq_init_attr a{};
    a.attr.max_wr = static_cast<uint32_t>(max_wr);
    a.attr.max_sge = 1;
    return ibv_create_srq(pd_, &a);
  }
  void destroy_srq(void* srq) override
  {
    if (srq) ibv_destroy_srq(static_cast<ibv_srq*>(srq));
  }

  // A thread domain and the parent domain of the PD that carries it (the
  // queue pair is created on the parent domain).
  void* alloc_td() override
  {
    if (!port_.thread_domains) return nullptr;
    ibv_td_init_attr ta{};
    ibv_td* td = ibv_alloc_td(ctx_, &ta);
    if (!td) return nullptr;
    ibv_parent_domain_init_attr pa{};
    pa.pd = pd_;
    pa.td = td;
    ibv_pd* parent = ibv_alloc_parent_domain(ctx_, &pa);
    if (!parent) {
      ibv_dealloc_td(td);
      return nullptr;
    }
    return new td_t{td, parent};
  }
  void dealloc_td(void* p) override
  {
    auto* t = static_cast<td_t*>(p);
    if (!t) return;
    ibv_dealloc_pd(t->parent);
    ibv_dealloc_td(t->td);
    delete t;
  }

  qp_t create_qp(void* cq, void* srq, void* td, uint32_t max_send_wr,
                 uint32_t max_inline) override
  {
    ibv_qp_init_attr a{};
    a.send_cq = static_cast<ibv_cq*>(cq);
    a.recv_cq = static_cast<ibv_cq*>(cq);
    a.srq = static_cast<ibv_srq*>(srq);
    a.cap.max_send_wr = max_send_wr;
    a.cap.max_send_sge = 2;
    a.cap.max_inline_data = max_inline;
    a.qp_type = IBV_QPT_RC;
    ibv_pd* pd = td ? static_cast<td_t*>(td)->parent : pd_;
    qp_t out;
    ibv_qp* qp = ibv_create_qp(pd, &a);
    if (!qp) return out;
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.pkey_index = 0;
    m.port_num = static_cast<uint8_t>(port_.port);
    m.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_WRITE;
    if (ibv_modify_qp(qp, &m,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                          IBV_QP_ACCESS_FLAGS) != 0) {
      const int e = errno;
      ibv_destroy_qp(qp);
      errno = e;
      return out;
    }
    out.handle = qp;
    out.qpn = qp->qp_num;
    return out;
  }
  void destroy_qp(const qp_t& qp) override
  {
    if (qp.handle) ibv_destroy_qp(static_cast<ibv_qp*>(qp.handle));
  }

  int to_rtr(const qp_t& qp, const qp_addr_t& r) override
  {
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_RTR;
    m.path_mtu = static_cast<ibv_mtu>(port_.mtu);
    m.dest_qp_num = r.qpn;
    m.rq_psn = r.psn;
    m.max_dest_rd_atomic = 16;
    m.min_rnr_timer = 12;
    m.ah_attr.dlid = r.lid;
    m.ah_attr.port_num = static_cast<uint8_t>(port_.port);
    if (port_.gid_idx >= 0) {
      m.ah_attr.is_global = 1;
      std::memcpy(m.ah_attr.grh.dgid.raw, r.gid, 16);
      m.ah_attr.grh.sgid_index = static_cast<uint8_t>(port_.gid_idx);
      m.ah_attr.grh.hop_limit = 64;
    }
    return ibv_modify_qp(static_cast<ibv_qp*>(qp.handle), &m,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                             IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  }

  int to_rts(const qp_t& qp, uint32_t psn) override
  {
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_RTS;
    m.timeout = 14;
    m.retry_cnt = 7;
    m.rnr_retry = 7;  // infinite: a peer without receive buffers is slow
    m.sq_psn = psn;
    m.max_rd_atomic = 16;
    return ibv_modify_qp(static_cast<ibv_qp*>(qp.handle), &m,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                             IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                             IBV_QP_MAX_QP_RD_ATOMIC);
  }

  int post_send(const qp_t& qp, const wr_t& w) override
  {
    ibv_sge sge[2];
    for (int i = 0; i < w.nsge; ++i) {
      sge[i].addr = reinterpret_cast<uintptr_t>(w.sge[i].addr);
      sge[i].length = w.sge[i].len;
      sge[i].lkey = w.sge[i].lkey;
    }
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = w.wr_id;
    wr.sg_list = sge;
    wr.num_sge = w.nsge;
    wr.send_flags = (w.signaled ? IBV_SEND_SIGNALED : 0) |
                    (w.inline_data ? IBV_SEND_INLINE : 0);
    switch (w.op) {
      case op_t::send:
        wr.opcode = IBV_WR_SEND;
        break;
      case op_t::write:
        wr.opcode = IBV_WR_RDMA_WRITE;
        break;
      case op_t::write_imm:
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        wr.imm_data = w.imm_be;
        break;
      case op_t::read:
        wr.opcode = IBV_WR_RDMA_READ;
        break;
    }
    wr.wr.rdma.remote_addr = w.raddr;
    wr.wr.rdma.rkey = w.rkey;
    return ibv_post_send(static_cast<ibv_qp*>(qp.handle), &wr, &bad);
  }

  int post_srq_recv(void* srq, void* buf, uint32_t len, uint32_t lkey,
                    uint64_t wr_id) override
  {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf), len, lkey};
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return ibv_post_srq_recv(static_cast<ibv_srq*>(srq), &wr, &bad);
  }

  int poll_cq(void* cq, wc_t* out, int n) override
  {
    constexpr int kBatch = 16;
    ibv_wc wc[kBatch];
    if (n > kBatch) n = kBatch;
    const int got = ibv_poll_cq(static_cast<ibv_cq*>(cq), n, wc);
    for (int i = 0; i < got; ++i) {
      wc_t& o = out[i];
      o.wr_id = wc[i].wr_id;
      o.len = wc[i].byte_len;
      o.imm_be = 0;
      o.qpn = wc[i].qp_num;
      o.error = wc[i].status == IBV_WC_SUCCESS
                    ? nullptr
                    : ibv_wc_status_str(wc[i].status);
      switch (wc[i].opcode) {
        case IBV_WC_SEND:
          o.kind = wc_t::kind_t::send;
          break;
        case IBV_WC_RDMA_WRITE:
          o.kind = wc_t::kind_t::write;
          break;
        case IBV_WC_RDMA_READ:
          o.kind = wc_t::kind_t::read;
          break;
        case IBV_WC_RECV_RDMA_WITH_IMM:
          o.kind = wc_t::kind_t::recv_imm;
          o.imm_be = wc[i].imm_data;
          break;
        default:
          o.kind = wc_t::kind_t::recv;
          break;
      }
      // an error completion's opcode is undefined: a receive's wr_id is
      // told apart by the backend (its receive records), so report "recv"
      // only for what the hardware called one
      if (o.error && wc[i].opcode != IBV_WC_RECV) o.kind = wc_t::kind_t::send;
    }
    return got;
  }

 private:
  struct td_t {
    ibv_td* td;
    ibv_pd* parent;
  };

  bool use_port(ibv_context* ctx, const ibv_device_attr_ex& d,
                const ibv_port_attr& p, int port, const open_attr_t& attr,
                std::string* why)
  {
    port_.port = port;
    port_.lid = p.lid;
    port_.roce = p.link_layer == IBV_LINK_LAYER_ETHERNET;
    port_.mtu = p.active_mtu;
    port_.max_msg = p.max_msg_sz;
    port_.max_qp_wr = static_cast<uint32_t>(d.orig_attr.max_qp_wr);
    port_.max_srq_wr = static_cast<uint32_t>(d.orig_attr.max_srq_wr);
    port_.max_cqe = static_cast<uint32_t>(d.orig_attr.max_cqe);
    const uint32_t rc_odp = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
                            IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ;
    port_.odp_explicit =
        (d.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
        (d.odp_caps.per_transport_caps.rc_odp_caps & rc_odp) == rc_odp;
    port_.odp_implicit = port_.odp_explicit &&
                         (d.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT);
    port_.thread_domains = true;
    port_.pins_memory = true;
    int gid = -1;
    if (attr.gid_idx >= 0 && !attr.force_gid_auto_select) {
      if (attr.gid_idx >= p.gid_tbl_len) {
        *why = "ibv_gid_idx " + std::to_string(attr.gid_idx) +
               " is beyond the GID table of port " + std::to_string(port) +
               " (" + std::to_string(p.gid_tbl_len) + " entries)";
        return false;
      }
      gid = attr.gid_idx;
    } else if (port_.roce) {
      gid = auto_gid(ctx, port, p.gid_tbl_len);
      if (gid < 0) {
        *why = "port " + std::to_string(port) +
               " is RoCE and has no usable GID (no IP address on its "
               "interface?)";
        return false;
      }
    }
    port_.gid_idx = gid;
    if (gid >= 0) {
      ibv_gid g{};
      if (ibv_query_gid(ctx, static_cast<uint8_t>(port), gid, &g) != 0) {
        *why = "ibv_query_gid failed for GID " + std::to_string(gid);
        return false;
      }
      std::memcpy(port_.gid, g.raw, 16);
    }
    return true;
  }

  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  port_t port_;
};

}  // namespace

std::unique_ptr<verbs_t> open_real_verbs(const open_attr_t& attr,
                                         std::string* why)
{
  auto v = std::make_unique<real_verbs_t>();
  if (!v->open(attr, why)) return nullptr;
  return v;
}

bool fake_selected()
{
  const char* v = std::getenv("LCI_IBV_FAKE");
  return v && *v;
}

std::unique_ptr<verbs_t> open_verbs(const open_attr_t& attr, std::string* why)
{
  if (fake_selected())
    return open_fake_verbs(attr, std::getenv("LCI_IBV_FAKE"), why);
  return open_real_verbs(attr, why);
}

}  // namespace lci::net::ibv
