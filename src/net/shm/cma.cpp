#include "net/shm/cma.hpp"

#include <sys/uio.h>

#include <cerrno>

namespace lci::net::shm
{

// process_vm_writev / readv of the whole range (the kernel may copy less
// than asked); false when the kernel refuses
bool cma(pid_t pid, void* local, uint64_t remote, size_t size, bool write)
{
  char* l = static_cast<char*>(local);
  while (size > 0) {
    iovec li{l, size};
    iovec ri{reinterpret_cast<void*>(remote), size};
    ssize_t n = write ? process_vm_writev(pid, &li, 1, &ri, 1, 0)
                      : process_vm_readv(pid, &li, 1, &ri, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    l += n;
    remote += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace lci::net::shm
