// The socket backend's context. See socket.hpp for the overview, device.hpp
// for the device.
#include "net/socket/socket.hpp"

#include <arpa/inet.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>

#include "net/socket/device.hpp"
#include "net/socket/keys.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace lci::net::socket
{
namespace
{

// The decimal value of the environment variable `name`: `dflt` when it is
// unset or empty, 0 or a value in [lo, hi] when set; anything else is an
// error that says what the variable must be (`what`).
size_t env_number(const char* name, size_t dflt, size_t lo, size_t hi,
                  const char* what)
{
  const char* text = std::getenv(name);
  if (!text || !*text) return dflt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (*end != '\0' || *text == '-' || (v != 0 && v < lo) || v > hi)
    util::throw_fatal("alloc_runtime: ", name, " '", text, "' is not ", what);
  return static_cast<size_t>(v);
}

class socket_context_t final : public context_t
{
 public:
  socket_context_t(const runtime_attr_t& attr, int rank_me, int rank_n,
                   const std::vector<std::string>& other_hosts)
  {
    cfg_.rank_me = rank_me;
    cfg_.rank_n = rank_n;
    const char* env = std::getenv("LCI_SOCKET_ADDR");
    in_addr probe{};
    if (env && *env) {
      if (::inet_pton(AF_INET, env, &probe) != 1)
        util::throw_fatal("alloc_runtime: LCI_SOCKET_ADDR '", env,
                          "' is not an IPv4 address");
      cfg_.ip = env;
    } else if (other_hosts.empty()) {
      cfg_.ip = "127.0.0.1";
    } else {
      cfg_.ip = route_address(other_hosts);
      if (cfg_.ip.empty())
        util::throw_fatal(
            "alloc_runtime: socket backend: no route to the other hosts of "
            "the job (",
            other_hosts.front(),
            " ...) resolves; set LCI_SOCKET_ADDR to this host's address on "
            "their network");
    }
    // the core's largest eager message (a packet) is what send_copy sees
    cfg_.max_copy = attr.packet_size;
    cfg_.connect_timeout_s =
        attr.bootstrap_timeout ? attr.bootstrap_timeout : 120;
    cfg_.wait_us = env_number("LCI_SOCKET_WAIT_US", kWaitUs, 0, 1000000,
                              "a number of microseconds from 0 to 1000000");
    cfg_.recv_chunk =
        env_number("LCI_SOCKET_RECV_CHUNK", kRecvChunk, 4096, size_t(1) << 30,
                   "a number of bytes from 4096 to 2^30 (or 0: no limit)");
    cfg_.keys = std::make_shared<key_table_t>();
    caps_.backend = "socket";
    caps_.provider = "tcp " + cfg_.ip;
    caps_.max_inject_size = attr.packet_size;
    caps_.max_msg_size = size_t(1) << 30;
    caps_.network_completion = "delivery";
    caps_.rma = true;
    caps_.imm_data_size = 8;
    caps_.mr_local = false;
    caps_.rma_virtual = true;
    LCI_LOG(debug, "socket backend: rank ", rank_me, " listens on ", cfg_.ip);
  }

  std::unique_ptr<net_device_t> alloc_device(const device_attr_t&) override
  {
    return std::make_unique<socket_device_t>(cfg_);
  }

  // Peers address a registration by virtual address under its key; the
  // key table issues the keys and lists the regions (keys.hpp).
  net_mr_t register_memory(void* buf, size_t size, const char* call) override
  {
    return register_memory_key(buf, size, call, cfg_.keys->issue());
  }

  net_mr_t register_memory_key(void* buf, size_t size, const char*,
                               uint64_t rkey) override
  {
    nregistered_.fetch_add(1, std::memory_order_relaxed);
    cfg_.keys->add(rkey, static_cast<char*>(buf), size);
    net_mr_t mr;
    mr.rkey = rkey;
    mr.rma_base = reinterpret_cast<uintptr_t>(buf);
    mr.handle = cfg_.keys.get();  // non-null: a live registration
    return mr;
  }

  void deregister_memory(net_mr_t* mr) override
  {
    if (!mr->handle) return;
    cfg_.keys->remove(mr->rkey);
    nregistered_.fetch_sub(1, std::memory_order_relaxed);
    *mr = net_mr_t();
  }

 private:
  config_t cfg_{};
};

}  // namespace

std::unique_ptr<context_t> alloc_context(
    const runtime_attr_t& attr, int rank_me, int rank_n,
    const std::vector<std::string>& other_hosts)
{
  return std::make_unique<socket_context_t>(attr, rank_me, rank_n, other_hosts);
}

}  // namespace lci::net::socket
