// A posted receive waiting in a matching engine, and its completion.
#ifndef LCI_CORE_RECV_HPP
#define LCI_CORE_RECV_HPP

#include "lci.hpp"
#include "resource/packet_pool.hpp"

namespace lci
{

struct recv_t {
  void* buffer;
  size_t size;  // capacity of buffer
  comp_impl_t* comp;
  void* user_context;
};

// Copies the message in `pkt` into the receive, returns the packet to its
// pool and builds the status. With `signal`, signals the receive's
// completion object and deletes `recv`. A message larger than the receive
// buffer is a fatal error (thrown after cleaning up).
status_t complete_recv(recv_t* recv, packet_t* pkt, bool signal);

}  // namespace lci

#endif  // LCI_CORE_RECV_HPP
