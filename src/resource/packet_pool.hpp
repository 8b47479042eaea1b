// Fixed-size buffers for the inject and eager protocols (paper 4.1.2).
// Every packet remembers its pool, so whoever finishes with it (a send
// completion, the progress engine after delivering it) returns it to the
// right place. get() never blocks: nullptr means "empty, retry later".
//
// This version is a single spinlocked stack; the per-thread deques with work
// stealing of the paper replace it without changing the interface.
// Thread safety: any-thread.
#ifndef LCI_RESOURCE_PACKET_POOL_HPP
#define LCI_RESOURCE_PACKET_POOL_HPP

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <vector>

#include "lci.hpp"
#include "util/spinlock.hpp"

namespace lci
{

class packet_pool_impl_t;

// The packet's local bookkeeping sits in front of its data; only data
// travels on the wire.
struct alignas(64) packet_t {
  packet_pool_impl_t* pool;
  // the device whose pre-posted receive holds this packet, else nullptr; lets
  // free_device give back the packets of receives that never completed
  void* recv_owner;
  // payload bytes of the message held (an unexpected send)
  size_t length;
  char* data() { return reinterpret_cast<char*>(this) + sizeof(packet_t); }
  static packet_t* from_data(void* d)
  {
    return reinterpret_cast<packet_t*>(static_cast<char*>(d) -
                                       sizeof(packet_t));
  }
};

class packet_pool_impl_t
{
 public:
  packet_pool_impl_t(const packet_pool_attr_t& attr);
  ~packet_pool_impl_t();
  packet_pool_impl_t(const packet_pool_impl_t&) = delete;
  packet_pool_impl_t& operator=(const packet_pool_impl_t&) = delete;

  packet_t* get()
  {
    util::spin_guard_t g(lock_);
    if (free_.empty()) return nullptr;
    packet_t* p = free_.back();
    free_.pop_back();
    return p;
  }
  static void put(packet_t* p)
  {
    packet_pool_impl_t* pool = p->pool;
    util::spin_guard_t g(pool->lock_);
    pool->free_.push_back(p);
  }
  // Gives back every packet held by a receive pre-posted on `owner`.
  void reclaim_recvs(const void* owner);
  size_t count_free()
  {
    util::spin_guard_t g(lock_);
    return free_.size();
  }

  packet_pool_attr_t attr;
  // devices whose receives this pool supplies; it cannot be freed before them
  std::atomic<int> users{0};

 private:
  char* slab_ = nullptr;
  size_t stride_ = 0;
  util::spinlock_t lock_;
  std::vector<packet_t*> free_;
};

}  // namespace lci

#endif  // LCI_RESOURCE_PACKET_POOL_HPP
