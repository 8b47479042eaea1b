// A posted receive waiting in a matching engine, and its completion.
#ifndef LCI_CORE_RECV_HPP
#define LCI_CORE_RECV_HPP

#include "core/protocol.hpp"
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

  // A receive is allocated per post and freed at its completion: from a
  // per-thread cache of freed ones (post.cpp), not malloc, when it can.
  static void* operator new(size_t size);
  static void operator delete(void* p);
};

// Completes a receive with the message in `pkt` and returns the packet to
// its pool. An eager message is copied into the receive buffer (done; with
// `signal`, the receive's completion object is signalled too); an RTS
// starts the rendezvous transfer (posted: the completion object is
// signalled when the data has landed). With `signal`, `recv` is deleted. A
// message larger than the receive buffer is a fatal error (thrown after
// cleaning up).
status_t complete_recv(recv_t* recv, packet_t* pkt, bool signal);

// The same for an eager message given by its header and payload (`pkt`,
// if not null, holds them and goes back to its pool before the signal).
status_t complete_recv_eager(recv_t* recv, const msg_header_t& hdr,
                             const void* payload, size_t size, packet_t* pkt,
                             bool signal);

}  // namespace lci

#endif  // LCI_CORE_RECV_HPP
