// The socket backend's registrations (socket.hpp): every RMA frame a peer
// sends is checked here at the target before a byte of target memory is
// touched. A registration is found by its key; the frame's offset and size
// must lie inside it. Peers address a registration by its virtual address
// (rma_base), so a key with the address of another region is refused too. Any
// thread (a mutex: registrations are rare, lookups one per RMA frame, each far
// cheaper than the frame's system calls).
#ifndef LCI_NET_SOCKET_KEYS_HPP
#define LCI_NET_SOCKET_KEYS_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace lci::net::socket
{

class key_table_t
{
 public:
  key_table_t();
  // A fresh key (a counter from a per-process random start: keys of
  // another process or runtime are unlikely to be live here).
  uint64_t issue() { return next_.fetch_add(1, std::memory_order_relaxed); }
  void add(uint64_t rkey, char* base, size_t size);
  void remove(uint64_t rkey);
  // The target bytes [addr, addr + size) of the registration `rkey`, or
  // null when there is none or the range leaves it.
  char* find(uint64_t rkey, uint64_t addr, uint64_t size) const;

 private:
  struct region_t {
    char* base;
    size_t size;
  };
  std::atomic<uint64_t> next_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, region_t> regions_;
};

}  // namespace lci::net::socket

#endif  // LCI_NET_SOCKET_KEYS_HPP
