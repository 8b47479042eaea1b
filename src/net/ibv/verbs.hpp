// The thin verbs layer of the ibv backend: every libibverbs call the backend
// makes goes through verbs_t, so that everything above it (connection state
// machine, queue-pair table, completion dispatch, try-lock policy,
// immediate-data encoding, registration cache, error paths) runs unchanged
// over one of two implementations:
//   - real (verbs_real.cpp): libibverbs on the first RDMA device with an
//     active port;
//   - fake (verbs_fake.cpp), for tests only: queue pairs of processes of one
//     machine deliver through shared memory (docs/ARCHITECTURE.md, "The ibv
//     backend"). Selected by the environment variable LCI_IBV_FAKE.
// The layer speaks its own small types, not libibverbs', so the fake needs
// nothing from the verbs headers and the backend above sees one vocabulary.
#ifndef LCI_NET_IBV_VERBS_HPP
#define LCI_NET_IBV_VERBS_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace lci::net::ibv
{

// What the device and its port offer (after open).
struct port_t {
  std::string device;  // "mlx5_0", or "fake"
  int port = 1;
  uint16_t lid = 0;
  bool roce = false;  // link layer Ethernet: addressed by GID
  int gid_idx = -1;   // the GID in use (-1: none, InfiniBand by LID)
  uint8_t gid[16] = {};
  int mtu = 0;  // active path MTU as the verbs enum (1: 256 .. 5: 4096)
  uint32_t max_inline = 0;      // inline bytes a send may carry
  uint64_t max_msg = 0;         // largest message, write or read
  uint32_t max_qp_wr = 0;       // deepest send queue
  uint32_t max_srq_wr = 0;      // deepest shared receive queue
  uint32_t max_cqe = 0;         // largest completion queue
  bool odp_explicit = false;    // registrations with on-demand paging
  bool odp_implicit = false;    // one registration of the whole address space
  bool thread_domains = false;  // ibv_alloc_td works
  // registrations pin memory against RLIMIT_MEMLOCK (the fake pins nothing
  // unless told to, so the limit check can be tested)
  bool pins_memory = true;
};

// How the device of `gid_idx` was asked to choose its GID.
struct open_attr_t {
  int gid_idx = -1;  // -1: automatic
  bool force_gid_auto_select = false;
};

// The address of one queue pair, exchanged through the bootstrap.
struct qp_addr_t {
  uint16_t lid = 0;
  uint8_t gid[16] = {};
  uint32_t qpn = 0;
  uint32_t psn = 0;
};

struct mr_t {
  void* handle = nullptr;  // null: the registration failed (errno set)
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

struct qp_t {
  void* handle = nullptr;
  uint32_t qpn = 0;
};

enum class op_t : uint8_t { send, write, write_imm, read };

struct sge_t {
  const void* addr = nullptr;
  uint32_t len = 0;
  uint32_t lkey = 0;  // unused for inline sends
};

// One work request.
struct wr_t {
  op_t op = op_t::send;
  uint64_t wr_id = 0;
  sge_t sge[2];
  int nsge = 1;
  bool inline_data = false;
  bool signaled = true;
  uint64_t raddr = 0;  // write, write_imm, read
  uint32_t rkey = 0;
  uint32_t imm_be = 0;  // write_imm: network byte order, as on the wire
};

// One work completion.
struct wc_t {
  enum class kind_t : uint8_t { send, write, read, recv, recv_imm } kind;
  uint64_t wr_id;
  uint32_t len;     // recv: bytes received
  uint32_t imm_be;  // recv_imm: network byte order
  uint32_t qpn;     // the local queue pair
  // nullptr, or the failure (ibv_wc_status_str's words)
  const char* error;
};

class verbs_t
{
 public:
  virtual ~verbs_t() = default;
  // "libibverbs" or "fake (test only)"
  virtual const char* name() const = 0;
  virtual const port_t& port() const = 0;

  // Memory: local write, remote read and write; `odp`: on-demand paging.
  // addr null and len SIZE_MAX with odp: the implicit registration.
  virtual mr_t reg_mr(void* addr, size_t len, bool odp) = 0;
  virtual void dereg_mr(const mr_t& mr) = 0;
  // Asks the adapter to map the pages of [addr, addr + len) of an
  // on-demand-paging registration now (ibv_advise_mr): `advice` 0 for
  // reading, 1 for writing, 2 only the pages present. 0 or an errno.
  virtual int prefetch_mr(const mr_t& mr, void* addr, size_t len,
                          int advice) = 0;

  virtual void* create_cq(int cqe) = 0;  // null: failed (errno)
  virtual void destroy_cq(void* cq) = 0;
  virtual void* create_srq(int max_wr) = 0;
  virtual void destroy_srq(void* srq) = 0;
  // A thread domain (null: none, the device has none or it failed).
  virtual void* alloc_td() = 0;
  virtual void dealloc_td(void* td) = 0;
  // An RC queue pair on `cq` and `srq`, in the thread domain `td` (may be
  // null), in state INIT. handle null: failed (errno).
  virtual qp_t create_qp(void* cq, void* srq, void* td, uint32_t max_send_wr,
                         uint32_t max_inline) = 0;
  virtual void destroy_qp(const qp_t& qp) = 0;
  // INIT -> RTR towards `remote` (receives work), then RTR -> RTS with the
  // local `psn` (sends work). 0 or an errno.
  virtual int to_rtr(const qp_t& qp, const qp_addr_t& remote) = 0;
  virtual int to_rts(const qp_t& qp, uint32_t psn) = 0;

  // 0, ENOMEM (queue full: retry) or another errno.
  virtual int post_send(const qp_t& qp, const wr_t& wr) = 0;
  virtual int post_srq_recv(void* srq, void* buf, uint32_t len, uint32_t lkey,
                            uint64_t wr_id) = 0;
  // Up to n completions; negative: the poll failed.
  virtual int poll_cq(void* cq, wc_t* out, int n) = 0;
};

// The verbs of this process: the fake when LCI_IBV_FAKE is set (test
// only: "1" a fake device with an active port; "down" its port down;
// "pin" it also pins memory, so the memlock check applies; "check" it
// fails accesses through stale registrations), else libibverbs.
// Null when no device with an active port can be opened, and *why says
// why in words (no device, port down, ...).
std::unique_ptr<verbs_t> open_verbs(const open_attr_t& attr, std::string* why);
std::unique_ptr<verbs_t> open_real_verbs(const open_attr_t& attr,
                                         std::string* why);
std::unique_ptr<verbs_t> open_fake_verbs(const open_attr_t& attr,
                                         const std::string& mode,
                                         std::string* why);
// Whether the process selected the fake (LCI_IBV_FAKE set and not empty).
bool fake_selected();
// Whether this process sees physical frames in /proc/self/pagemap (needs
// CAP_SYS_ADMIN), without which LCI_IBV_FAKE=check checks nothing.
bool fake_frames_visible();

}  // namespace lci::net::ibv

#endif  // LCI_NET_IBV_VERBS_HPP
