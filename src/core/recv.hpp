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
  mr_t mr;    // the user's registration of buffer (rendezvous), if any
  int rank;   // the source it was posted with (ANY_SOURCE: -1)
  tag_t tag;  // the tag it was posted with
};

// Completes a receive with the message in `pkt` and returns the packet to
// its pool. An eager message is copied into the receive buffer (done; with
// `signal`, the receive's completion object is signalled too); an RTS
// starts the rendezvous transfer (posted: the completion object is
// signalled when the data has landed). With `signal`, `recv` is deleted. A
// message larger than the receive buffer is a fatal error (thrown after
// cleaning up).
status_t complete_recv(recv_t* recv, packet_t* pkt, bool signal);

}  // namespace lci

#endif  // LCI_CORE_RECV_HPP
