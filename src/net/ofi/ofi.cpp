#include "net/ofi/ofi.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/node.hpp"
#include "net/shm/completions.hpp"
#include "net/shm/keys.hpp"
#include "net/shm/leftovers.hpp"
#include "net/shm/segment.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/spinlock.hpp"

namespace lci::net::ofi
{
namespace
{

[[noreturn]] [[gnu::cold]] void fail(const char* call, int rc)
{
  util::throw_fatal("libfabric ", call, " failed: ", fi_strerror(-rc), " (", rc,
                    ")");
}

void check(const char* call, int rc)
{
  if (rc != 0) fail(call, rc);
}

// The local IPv4 address the kernel would use to reach `host` (a UDP
// socket's connect sends nothing), or 0 when it does not resolve or has no
// route. The name is resolved as the system resolves names (getaddrinfo).
in_addr_t route_source(const std::string& host)
{
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &res) != 0 || !res) return 0;
  in_addr_t out = 0;
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    if (::connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0)
      out = local.sin_addr.s_addr;
    ::close(fd);
  }
  freeaddrinfo(res);
  return out;
}

// The tcp provider's interface when FI_TCP_IFACE does not name one (see
// ofi.hpp); empty: none found, libfabric chooses.
std::string pick_interface(const std::vector<std::string>& other_hosts)
{
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return {};
  auto usable = [](const ifaddrs* i) {
    return i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
           (i->ifa_flags & IFF_UP) && (i->ifa_flags & IFF_RUNNING) &&
           !(i->ifa_flags & IFF_LOOPBACK);
  };
  std::string out;
  for (const std::string& h : other_hosts) {
    const in_addr_t src = route_source(h);
    if (src == 0) continue;
    for (ifaddrs* i = ifs; i && out.empty(); i = i->ifa_next)
      if (usable(i) &&
          reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == src)
        out = i->ifa_name;
    if (!out.empty()) break;
  }
  for (ifaddrs* i = ifs; i && out.empty(); i = i->ifa_next)
    if (usable(i)) out = i->ifa_name;
  freeifaddrs(ifs);
  return out;
}

bool env_set(const char* name)
{
  const char* v = std::getenv(name);
  return v && *v;
}

template <typename T>
void close_fid(T* obj)
{
  if (obj) fi_close(&obj->fid);
}

std::string unique_shm_name()
{
  static const uint64_t nonce = static_cast<uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count());
  static std::atomic<uint64_t> counter{0};
  return "lci-" + std::to_string(::getpid()) + "-" + std::to_string(nonce) +
         "-" + std::to_string(counter.fetch_add(1));
}

class ofi_device_t final : public net_device_t
{
 public:
  // `shared_lock`: the try-lock to use when the provider locks at domain
  // granularity (one per context), else nullptr: a lock of the device's own.
  // `network_flags`: the completion level of post_send_network. `keys`:
  // this context's registration table when the peers on this machine check
  // keys through it (else null); `local[r]`: rank r runs on this machine;
  // `rank_me`: this process's rank, which every message carries as its
  // remote completion data when the provider has some (a receive's
  // completion then names its sender, as upstream LCI 2's raw layer does).
  ofi_device_t(fid_domain* domain, fi_info* info, const device_attr_t& attr,
               util::spinlock_t* shared_lock, uint64_t network_flags,
               std::shared_ptr<shm::key_table_t> keys,
               const std::vector<char>& local, int rank_me)
      : network_flags_(network_flags),
        max_inject_(info->tx_attr->inject_size),
        send_data_(info->domain_attr->cq_data_size >= sizeof(uint32_t)),
        rank_me_(static_cast<uint64_t>(rank_me)),
        virt_addr_((info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0),
        keys_(std::move(keys)),
        local_(local),
        lock_(shared_lock ? *shared_lock : own_lock_)
  {
    where_ = std::string("ofi ") + info->fabric_attr->prov_name;
    if (info->domain_attr->name)
      where_ += std::string(" domain ") + info->domain_attr->name;
    try {
      open(domain, info, attr);
    } catch (...) {
      close();
      throw;
    }
  }

  ~ofi_device_t() override { close(); }

 private:
  void open(fid_domain* domain, fi_info* info, const device_attr_t& attr)
  {
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_DATA;
    cq_attr.size = attr.net_max_cqes;
    check("fi_cq_open", fi_cq_open(domain, &cq_attr, &cq_, nullptr));
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    check("fi_av_open", fi_av_open(domain, &av_attr, &av_, nullptr));
    fi_info* ep_info = fi_dupinfo(info);
    ep_info->tx_attr->size = attr.net_max_sends;
    ep_info->rx_attr->size = attr.net_max_recvs;
    int rc = fi_endpoint(domain, ep_info, &ep_, nullptr);
    fi_freeinfo(ep_info);
    check("fi_endpoint", rc);
    check("fi_ep_bind(av)", fi_ep_bind(ep_, &av_->fid, 0));
    check("fi_ep_bind(cq)", fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV));
    if (std::strcmp(info->fabric_attr->prov_name, "shm") == 0) {
      // shm names its region "<pid>:<domain>:<endpoint>" by default; a
      // process that died without closing leaves that file behind, and a
      // later process with the same pid cannot enable its endpoint (EBUSY).
      // A name with a per-process nonce never collides.
      std::string name = unique_shm_name();
      check("fi_setname", fi_setname(&ep_->fid, const_cast<char*>(name.c_str()),
                                     name.size() + 1));
    }
    check("fi_enable", fi_enable(ep_));
  }

  void close()
  {
    close_fid(ep_);
    close_fid(av_);
    close_fid(cq_);
    ep_ = nullptr;
    av_ = nullptr;
    cq_ = nullptr;
  }

 public:
  // The provider's name of the endpoint, then the name of the context's
  // registration table (empty without one), then the length of that name
  // in one byte.
  std::string get_address() override
  {
    char buf[256];
    size_t len = sizeof(buf);
    check("fi_getname", fi_getname(&ep_->fid, buf, &len));
    const std::string table = keys_ ? keys_->name() : std::string();
    return std::string(buf, len) + table +
           static_cast<char>(static_cast<unsigned char>(table.size()));
  }

  void connect(const std::vector<std::string>& addrs) override
  {
    addrs_.resize(addrs.size());
    checked_.assign(addrs.size(), 0);
    for (size_t r = 0; r < addrs.size(); ++r) {
      const std::string& a = addrs[r];
      const size_t tlen = a.empty() ? 0 : static_cast<unsigned char>(a.back());
      if (a.size() < tlen + 2)
        util::throw_fatal("alloc_device: rank ", r,
                          " sent no libfabric address (is its "
                          "LCI_ATTR_BACKEND ofi too?)");
      const size_t flen = a.size() - 1 - tlen;
      int n = fi_av_insert(av_, a.data(), 1, &addrs_[r], 0, nullptr);
      if (n != 1)
        util::throw_fatal("libfabric fi_av_insert failed for rank ", r, " (", n,
                          ")");
      // a peer on this machine publishes its registrations: its table is
      // mapped before the allocation's closing barrier, after which the
      // peer unlinks its name (connected). A table out of reach (another
      // /dev/shm under the same host name) leaves that peer to the provider.
      if (keys_ && local_[r] && tlen > 0) {
        try {
          keys_->map_peer(static_cast<int>(r), a.substr(flen, tlen));
          checked_[r] = 1;
        } catch (const fatal_error& e) {
          LCI_LOG(warn, "ofi backend: RMA keys at rank ", r,
                  " are not checked here: ", e.what());
        }
      }
    }
  }

  void connected() override
  {
    if (keys_) keys_->try_unlink();
  }

  // fi_inject: the provider copies at most its inject size
  route_caps_t route(int) override { return route_caps_t{max_inject_, false}; }

  // The pieces gathered on the stack, then one fi_inject. link_t bounds
  // the message by the runtime's inject limit, which kMaxGather covers.
  error_t send_copy(int rank, const void* head, size_t hlen, const void* tail,
                    size_t tlen) override
  {
    constexpr size_t kMaxGather = 1024;
    alignas(16) char buf[kMaxGather];
    const size_t size = hlen + tlen;
    if (size > kMaxGather)
      util::throw_fatal("ofi backend: a ", size,
                        "-byte inject exceeds the gather buffer");
    if (hlen) std::memcpy(buf, head, hlen);
    if (tlen) std::memcpy(buf + hlen, tail, tlen);
    if (!lock_.try_lock()) return errorcode_t::retry_lock;
    ssize_t rc = send_data_
                     ? fi_injectdata(ep_, buf, size, rank_me_, addrs_[rank])
                     : fi_inject(ep_, buf, size, addrs_[rank]);
    lock_.unlock();
    return result("fi_inject", rc, errorcode_t::done);
  }

  error_t post_send(int rank, const void* buf, size_t size, void* ctx) override
  {
    if (!lock_.try_lock()) return errorcode_t::retry_lock;
    ssize_t rc =
        send_data_
            ? fi_senddata(ep_, buf, size, nullptr, rank_me_, addrs_[rank], ctx)
            : fi_send(ep_, buf, size, nullptr, addrs_[rank], ctx);
    lock_.unlock();
    return result("fi_send", rc, errorcode_t::posted);
  }

  error_t post_send_network(int rank, const void* buf, size_t size,
                            void* ctx) override
  {
    iovec iov{const_cast<void*>(buf), size};
    fi_msg msg{};
    msg.msg_iov = &iov;
    msg.iov_count = 1;
    msg.addr = addrs_[rank];
    msg.context = ctx;
    uint64_t flags = FI_COMPLETION | network_flags_;
    if (send_data_) {
      msg.data = rank_me_;
      flags |= FI_REMOTE_CQ_DATA;
    }
    if (!lock_.try_lock()) return errorcode_t::retry_lock;
    ssize_t rc = fi_sendmsg(ep_, &msg, flags);
    lock_.unlock();
    return result("fi_sendmsg", rc, errorcode_t::posted);
  }

  error_t post_recv(void* buf, size_t size, void* ctx) override
  {
    if (!lock_.try_lock()) return errorcode_t::retry_lock;
    ssize_t rc = fi_recv(ep_, buf, size, nullptr, FI_ADDR_UNSPEC, ctx);
    lock_.unlock();
    return result("fi_recv", rc, errorcode_t::posted);
  }

  error_t post_write(int rank, const void* buf, size_t size, void* desc,
                     const remote_t& remote, void* ctx, bool delivered) override
  {
    if (refuse(rank, remote, size, cqe_t::kind_t::write, ctx))
      return errorcode_t::posted;
    iovec iov{const_cast<void*>(buf), size};
    fi_rma_iov riov{address(remote), size, remote.rkey};
    fi_msg_rma msg{};
    msg.msg_iov = &iov;
    msg.desc = &desc;
    msg.iov_count = 1;
    msg.addr = addrs_[rank];
    msg.rma_iov = &riov;
    msg.rma_iov_count = 1;
    msg.context = ctx;
    uint64_t flags = FI_COMPLETION | (delivered ? FI_DELIVERY_COMPLETE : 0);
    if (!lock_.try_lock()) return errorcode_t::retry_lock;
    ssize_t rc = fi_writemsg(ep_, &msg, flags);
    lock_.unlock();
    return result("fi_writemsg", rc, errorcode_t::posted);
  }

  error_t post_writeimm(int rank, const void* buf, size_t size, void* desc,
                        const remote_t& remote, uint64_t imm,
                        void* ctx) override
  {
    if (refuse(rank, remote, size, cqe_t::kind_t::write, ctx))
      return errorcode_t::posted;
    if (!lock_.try_lock()) return errorcode_t::retry_lock;
    ssize_t rc = fi_writedata(ep_, buf, size, desc, imm, addrs_[rank],
                              address(remote), remote.rkey, ctx);
    lock_.unlock();
    return result("fi_writedata", rc, errorcode_t::posted);
  }

  error_t post_read(int rank, void* buf, size_t size, void* desc,
                    const remote_t& remote, void* ctx) override
  {
    if (refuse(rank, remote, size, cqe_t::kind_t::read, ctx))
      return errorcode_t::posted;
    if (!lock_.try_lock()) return errorcode_t::retry_lock;
    ssize_t rc = fi_read(ep_, buf, size, desc, addrs_[rank], address(remote),
                         remote.rkey, ctx);
    lock_.unlock();
    return result("fi_read", rc, errorcode_t::posted);
  }

  // the provider and its domain (tcp: the interface), for net_state
  std::string debug_state() override { return where_; }

  // (libfabric lands every message in a pre-posted buffer: no scratch)
  size_t poll_comp(cqe_t* out, size_t max, char*, size_t) override
  {
    constexpr size_t kBatch = 16;
    fi_cq_data_entry entries[kBatch];
    if (max > kBatch) max = kBatch;
    if (__builtin_expect(refused_.any(), 0)) return refused_.take(out, max);
    if (!lock_.try_lock()) return 0;
    ssize_t n = fi_cq_read(cq_, entries, max);
    if (n == -FI_EAVAIL) {
      // one failed operation: hand it back with its context
      fi_cq_err_entry err{};
      ssize_t got = fi_cq_readerr(cq_, &err, 0);
      lock_.unlock();
      if (got != 1) return 0;
      out[0] = to_cqe(err.flags, err.op_context, 0, err.data);
      out[0].rank = -1;  // an error entry's data names no sender
      out[0].error =
          (err.flags & FI_RMA) ? rma_failure(err.err) : fi_strerror(err.err);
      return 1;
    }
    lock_.unlock();
    if (n == -FI_EAGAIN) return 0;
    if (n < 0) fail("fi_cq_read", static_cast<int>(n));
    for (ssize_t i = 0; i < n; ++i)
      out[i] = to_cqe(entries[i].flags, entries[i].op_context, entries[i].len,
                      entries[i].data);
    return static_cast<size_t>(n);
  }

 private:
  static cqe_t to_cqe(uint64_t flags, void* ctx, size_t len, uint64_t data)
  {
    cqe_t c{cqe_t::kind_t::send, ctx, len, 0, nullptr};
    if ((flags & FI_REMOTE_WRITE) && (flags & FI_REMOTE_CQ_DATA)) {
      c.kind = cqe_t::kind_t::remote_write;
      c.ctx = nullptr;
      c.imm = data;
    } else if (flags & FI_RECV) {
      c.kind = cqe_t::kind_t::recv;
      if (flags & FI_REMOTE_CQ_DATA) c.rank = static_cast<int>(data);
    } else if ((flags & FI_RMA) && (flags & FI_READ)) {
      c.kind = cqe_t::kind_t::read;
    } else if ((flags & FI_RMA) && (flags & FI_WRITE)) {
      c.kind = cqe_t::kind_t::write;
    }
    return c;
  }

  // A failed write or read, said with what may have caused it: a target
  // the key check cannot reach (another machine) is left to the provider,
  // and tcp fails the connection for a key its target does not hold. One
  // string per error code, kept for the life of the process (cqe_t's error
  // is a static string).
  [[gnu::cold]] static const char* rma_failure(int err)
  {
    static std::mutex mu;
    static std::map<int, std::string> said;
    std::lock_guard<std::mutex> g(mu);
    std::string& s = said[err];
    if (s.empty())
      s = std::string("libfabric failed the RDMA transfer: ") +
          fi_strerror(err) +
          " (on another machine the target's provider checks the key: tcp "
          "fails the connection when the target does not hold it, e.g. a "
          "deregistered region's, and every later operation with that rank "
          "fails too)";
    return s.c_str();
  }

  // The address the provider takes: the virtual address with
  // FI_MR_VIRT_ADDR, else the offset in the registration (the rmr's base is
  // the region's virtual address either way, which the key check needs).
  uint64_t address(const remote_t& remote) const
  {
    return virt_addr_ ? remote.base + remote.disp : remote.disp;
  }

  // A write or read to a peer on this machine whose table does not list
  // the key, or not these bytes under it: completed here with an error
  // flagged refused, before the provider sees it (libfabric 1.17's
  // providers do not return such an access as an error: shm never
  // completes it, tcp drops the connection).
  bool refuse(int rank, const remote_t& remote, size_t size, cqe_t::kind_t kind,
              void* ctx)
  {
    if (!keys_ || !checked_[static_cast<size_t>(rank)]) return false;
    const char* why =
        keys_->check(rank, remote.rkey, remote.base + remote.disp, size);
    if (__builtin_expect(why == nullptr, 1)) return false;
    refused_.push(kind, ctx, why, true);
    return true;
  }

  static error_t result(const char* call, ssize_t rc, errorcode_t ok)
  {
    if (rc == 0) return ok;
    if (rc == -FI_EAGAIN) return errorcode_t::retry_nomem;
    fail(call, static_cast<int>(rc));
  }

  fid_ep* ep_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  std::vector<fi_addr_t> addrs_;
  uint64_t network_flags_;  // completion level of post_send_network
  size_t max_inject_;       // the provider's inject size
  bool send_data_;          // messages carry rank_me_ as remote CQ data
  uint64_t rank_me_;
  bool virt_addr_;  // the provider addresses regions by FI_MR_VIRT_ADDR
  std::shared_ptr<shm::key_table_t> keys_;  // null: no key checks here
  std::vector<char> local_;                 // by rank: on this machine
  std::vector<char> checked_;  // by rank: its table is mapped (connect)
  shm::local_cqes_t refused_;  // accesses refused by the key check
  std::string where_;
  util::spinlock_t own_lock_;
  util::spinlock_t& lock_;  // endpoint + completion queue (+ domain: tcp)
};

class ofi_context_t final : public context_t
{
 public:
  ofi_context_t(const runtime_attr_t& attr,
                const std::vector<std::string>& other_hosts,
                const key_checks_t& checks)
  {
    // RMA (rendezvous, put, get) when the provider has it, else messages
    // only (then nothing above the eager limit can be sent)
    const uint64_t rma_caps =
        FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    // auto: shm on one machine, else the first network provider offered
    std::vector<std::string> names;
    if (attr.ofi_provider_name != "auto")
      names.push_back(attr.ofi_provider_name);
    else if (other_hosts.empty())
      names.push_back("shm");
    else
      names = {"cxi", "efa", "verbs", "tcp"};
    int rc = -FI_ENODATA;
    for (const std::string& name : names) {
      // tcp between machines: the interface that reaches them, unless the
      // user named one (FI_TCP_IFACE, which the provider reads itself)
      std::string domain;
      if (name == "tcp" && !other_hosts.empty() && !env_set("FI_TCP_IFACE"))
        domain = pick_interface(other_hosts);
      rc = get_info(name, domain, FI_MSG | rma_caps);
      if (rc != 0 || !info_) rc = get_info(name, domain, FI_MSG);
      if ((rc != 0 || !info_) && !domain.empty())
        rc = get_info(name, "", FI_MSG | rma_caps);
      if (rc == 0 && info_) {
        caps_.ofi_provider = name;
        break;
      }
    }
    if (rc == 0 && !info_) rc = -FI_ENODATA;
    if (rc != 0)
      util::throw_fatal(
          "alloc_runtime: libfabric provider '", attr.ofi_provider_name, "'",
          attr.ofi_provider_name == "auto"
              ? (other_hosts.empty() ? " (shm on one machine)"
                                     : " (cxi, efa, verbs or tcp)")
              : "",
          " is not available: ", fi_strerror(-rc),
          " (set LCI_ATTR_OFI_PROVIDER_NAME; for tcp also "
          "FI_TCP_IFACE)");
    info_->tx_attr->op_flags = 0;  // the probe's flag is not a default
    check("fi_fabric", fi_fabric(info_->fabric_attr, &fabric_, nullptr));
    check("fi_domain", fi_domain(fabric_, info_, &domain_, nullptr));
    const uint64_t mode = info_->domain_attr->mr_mode;
    caps_.backend = "ofi";
    caps_.provider = info_->fabric_attr->prov_name;
    if (info_->domain_attr->name) caps_.ofi_domain = info_->domain_attr->name;
    caps_.max_inject_size = info_->tx_attr->inject_size;
    caps_.max_msg_size = info_->ep_attr->max_msg_size;
    // The tcp provider runs one progress engine, under one lock, per domain
    // (every endpoint and cq of the domain takes it); shm locks per endpoint
    // and per cq. Our try-lock matches: per domain for tcp, per device else.
    domain_locked_ = std::strstr(caps_.provider.c_str(), "tcp") != nullptr;
    caps_.rma = (info_->caps & rma_caps) == rma_caps;
    caps_.imm_data_size = info_->domain_attr->cq_data_size;
    caps_.mr_local = (mode & FI_MR_LOCAL) != 0;
    // an rmr's base is the region's virtual address whatever the provider
    // takes (ofi_device_t::address): the key check needs it
    caps_.rma_virtual = true;
    prov_key_ = (mode & FI_MR_PROV_KEY) != 0;
    rank_me_ = checks.rank_me;
    open_key_table(checks);
  }

  ~ofi_context_t() override
  {
    close_fid(domain_);
    close_fid(fabric_);
    if (info_) fi_freeinfo(info_);
  }

  std::unique_ptr<net_device_t> alloc_device(const device_attr_t& attr) override
  {
    return std::make_unique<ofi_device_t>(
        domain_, info_, attr, domain_locked_ ? &domain_lock_ : nullptr,
        network_flags_, keys_, local_, rank_me_);
  }

  net_mr_t register_memory(void* buf, size_t size, const char* call) override
  {
    // without FI_MR_PROV_KEY the keys are ours to choose: a counter, so a
    // key is never reused within the domain
    uint64_t key = prov_key_ ? 0 : next_key_.fetch_add(1);
    fid_mr* mr = nullptr;
    const uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE |
                            FI_REMOTE_READ | FI_REMOTE_WRITE;
    int rc = fi_mr_reg(domain_, buf, size, access, 0, key, 0, &mr, nullptr);
    if (rc != 0)
      util::throw_fatal(call, ": libfabric cannot register ", size,
                        " bytes at ", buf, ": ", fi_strerror(-rc), " (", rc,
                        ")");
    nregistered_.fetch_add(1, std::memory_order_relaxed);
    net_mr_t out;
    out.handle = mr;
    out.desc = fi_mr_desc(mr);
    out.rkey = fi_mr_key(mr);
    out.rma_base = reinterpret_cast<uintptr_t>(buf);
    if (keys_) keys_->add(out.rkey, out.rma_base, size);
    return out;
  }

  void deregister_memory(net_mr_t* mr) override
  {
    if (mr->handle) {
      // out of the table first: once deregistration returns, no peer on
      // this machine posts an access to the region
      if (keys_) keys_->remove(mr->rkey);
      close_fid(static_cast<fid_mr*>(mr->handle));
      nregistered_.fetch_sub(1, std::memory_order_relaxed);
    }
    *mr = net_mr_t();
  }

 private:
  // fi_getinfo for `caps`, with the strongest completion level the provider
  // accepts for sends with comp_semantic network: a provider fails
  // fi_getinfo when asked for a transmit flag it does not support. It must
  // not become the default of every send (shm would give up its inline
  // protocol), so op_flags are cleared again before the endpoints are opened.
  int get_info(const std::string& provider, const std::string& domain,
               uint64_t caps)
  {
    fi_info* hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = caps;
    hints->mode = 0;
    hints->domain_attr->threading = FI_THREAD_SAFE;
    hints->domain_attr->mr_mode =
        FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->fabric_attr->prov_name = strdup(provider.c_str());
    if (!domain.empty()) hints->domain_attr->name = strdup(domain.c_str());
    int rc = -FI_ENODATA;
    const uint64_t levels[] = {FI_DELIVERY_COMPLETE, FI_TRANSMIT_COMPLETE, 0};
    const char* names[] = {"delivery", "transmit", "default"};
    for (size_t i = 0; i < 3 && rc != 0; ++i) {
      hints->tx_attr->op_flags = levels[i];
      rc = fi_getinfo(FI_VERSION(1, 14), nullptr, nullptr, 0, hints, &info_);
      if (rc == 0 && info_) {
        network_flags_ = levels[i];
        caps_.network_completion = names[i];
      }
    }
    fi_freeinfo(hints);
    // the domain hint does not filter the layered tcp;ofi_rxm entries
    // (libfabric 1.17 lists every interface whatever it says): take the
    // entry of that domain ourselves, or none
    if (rc == 0 && info_ && !domain.empty()) {
      fi_info* match = nullptr;
      for (fi_info* i = info_; i && !match; i = i->next)
        if (i->domain_attr && i->domain_attr->name &&
            domain == i->domain_attr->name)
          match = i;
      fi_info* keep = match ? fi_dupinfo(match) : nullptr;
      fi_freeinfo(info_);
      info_ = keep;
      if (!keep) rc = -FI_ENODATA;
    }
    return rc;
  }

  // The registration table, when the context checks keys and other ranks
  // of the job run on this machine.
  void open_key_table(const key_checks_t& checks)
  {
    if (!checks.on) return;
    const std::string me = machine_of(checks.nodes[checks.rank_me]);
    local_.assign(checks.nodes.size(), 0);
    bool any = false;
    for (size_t r = 0; r < checks.nodes.size(); ++r) {
      local_[r] = machine_of(checks.nodes[r]) == me;
      any |= local_[r] && static_cast<int>(r) != checks.rank_me;
    }
    if (!any) return;
    if (int n = shm::reclaim_leftovers(shm::kMagic, shm::key_table_t::kMagic))
      LCI_LOG(info, "ofi backend: removed ", n,
              " segments of dead processes from /dev/shm");
    keys_ = std::make_shared<shm::key_table_t>(
        checks.rank_me, static_cast<int>(checks.nodes.size()), shm::nonce());
  }

  uint64_t network_flags_ = 0;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  bool domain_locked_ = false;
  util::spinlock_t domain_lock_;  // the devices' lock when domain_locked_
  bool prov_key_ = false;
  std::shared_ptr<shm::key_table_t> keys_;  // null: no key checks
  std::vector<char> local_;                 // by rank: on this machine
  std::atomic<uint64_t> next_key_{1};
  int rank_me_ = 0;
};

}  // namespace

std::unique_ptr<context_t> alloc_context(
    const runtime_attr_t& attr, const std::vector<std::string>& other_hosts,
    const key_checks_t& checks)
{
  return std::make_unique<ofi_context_t>(attr, other_hosts, checks);
}

}  // namespace lci::net::ofi
