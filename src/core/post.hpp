// The arguments of one post_comm, resolved and checked (post.cpp), as the
// protocols receive them: eager and inject (post.cpp), rendezvous
// (rendezvous.cpp), put and get (rma.cpp).
#ifndef LCI_CORE_POST_HPP
#define LCI_CORE_POST_HPP

#include "lci.hpp"

namespace lci
{

class runtime_impl_t;
class device_impl_t;
class packet_pool_impl_t;
class matching_engine_impl_t;
struct packet_t;

struct post_args_t {
  runtime_impl_t* rt;
  device_impl_t* dev;
  packet_pool_impl_t* pool;
  matching_engine_impl_t* me;
  int rank;
  void* buffer;
  size_t size;
  tag_t tag;
  rcomp_t rcomp;
  void* user_context;
  matching_policy_t policy;
  mr_t mr;               // the user's registration of buffer, if any
  uint64_t remote_disp;  // put / get: offset in the remote region
  rmr_t rmr;             // put / get: the remote region
  comp_semantic_t semantic = comp_semantic_t::memory;
  comp_impl_t* comp = nullptr;  // the local completion (network sends)
  packet_t* upacket = nullptr;  // the user packet that is the buffer, if any
};

// The largest payload of an eager message sent from `send_pool` on `dev`
// (the smaller packet of the two, less the header).
size_t eager_payload_limit(packet_pool_impl_t* send_pool, device_impl_t* dev);

// The status of a communication that completed: done, with the fields of
// the post.
status_t done_status(const post_args_t& a);
// The same from its fields.
inline status_t done_status(int rank, void* buffer, size_t size, tag_t tag,
                            void* user_context)
{
  status_t s(errorcode_t::done);
  s.rank = rank;
  s.buffer = buffer;
  s.size = size;
  s.tag = tag;
  s.user_context = user_context;
  return s;
}

}  // namespace lci

#endif  // LCI_CORE_POST_HPP
