// Memory registrations (paper 3.3.1): register_memory / deregister_memory /
// get_rmr, the runtime's registry of the regions its users registered, the
// checks of an rmr at a posting call, and the registrations a transfer makes
// on the fly for a buffer the user did not register.
//
// One network context (libfabric domain) per runtime, so a registration is
// valid on every device of the runtime.
//
// What can be checked where: an rmr names its runtime (a value all ranks of
// a runtime share), its owner's rank and its size, so the posting call
// rejects an rmr of another runtime, an rmr used for another target rank and
// an access outside the region. When the target is this process, the
// registry also tells whether the region is still registered. For a remote
// target the backend decides: the native shm backend checks the key and the
// bytes against the target's registration table before any byte moves
// (net/shm/keys.hpp) and refuses the access; over libfabric a region its
// remote owner has deregistered cannot be detected by the initiator (shm
// never completes the access; tcp drops the connection, which surfaces as a
// fatal completion error). Peers must stop using an rmr before its owner
// deregisters it.
//
// Thread safety: any-thread.
#ifndef LCI_RESOURCE_MR_HPP
#define LCI_RESOURCE_MR_HPP

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "lci.hpp"
#include "net/net.hpp"

namespace lci
{

class runtime_impl_t;

class mr_impl_t
{
 public:
  runtime_impl_t* runtime = nullptr;
  char* address = nullptr;
  size_t size = 0;
  net::net_mr_t net;

  bool covers(const void* p, size_t n) const
  {
    auto* c = static_cast<const char*>(p);
    return c >= address && n <= size &&
           c - address <= static_cast<ptrdiff_t>(size - n);
  }
};

// The regions registered through register_memory, by remote key.
class mr_registry_t
{
 public:
  void add(mr_impl_t* mr);
  void remove(mr_impl_t* mr);
  // The live registration with this key, or nullptr. The pointer stays
  // valid only while the user does not deregister it.
  mr_impl_t* find(uint64_t rkey);
  // Deregisters and frees every region still registered (free_runtime).
  void release_all();
  // Regions registered now (introspection for tests).
  size_t count();

 private:
  std::mutex mu_;
  std::unordered_map<uint64_t, mr_impl_t*> by_key_;
};

// The registration a transfer uses for one of its buffers: the user's (a
// live mr covering the buffer), else one made for the transfer and released
// with it, else none (a local buffer when the backend does not need one).
class mr_use_t
{
 public:
  // `remote`: peers will write or read the buffer, so a key is needed.
  // Throws fatal_error naming `call` for an mr that is not live or does not
  // cover the buffer, or when the backend refuses the registration.
  void acquire(runtime_impl_t* rt, mr_t user, void* buf, size_t size,
               bool remote, const char* call);
  void release();
  ~mr_use_t() { release(); }

  void* desc() const { return desc_; }
  // what a peer's write or read of buf must target: the registration's
  // rma_base and key, and buf's offset in it
  const net::remote_t& remote() const { return remote_; }

 private:
  runtime_impl_t* rt_ = nullptr;
  net::net_mr_t owned_;
  bool has_owned_ = false;
  void* desc_ = nullptr;
  net::remote_t remote_;
};

// Checks an rmr for a put or get of `size` bytes at `disp` to `rank`;
// throws fatal_error naming `call` and what is wrong.
void check_rmr(runtime_impl_t* rt, const char* call, int rank, const rmr_t& rmr,
               uint64_t disp, size_t size);

}  // namespace lci

#endif  // LCI_RESOURCE_MR_HPP
