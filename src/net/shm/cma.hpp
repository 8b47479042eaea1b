// Cross-memory attach: the single-copy path of native shm RMA.
#ifndef LCI_NET_SHM_CMA_HPP
#define LCI_NET_SHM_CMA_HPP

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace lci::net::shm
{

// process_vm_writev / readv of the whole range (the kernel may copy less
// than asked); false when the kernel refuses
bool cma(pid_t pid, void* local, uint64_t remote, size_t size, bool write);

}  // namespace lci::net::shm

#endif  // LCI_NET_SHM_CMA_HPP
