// post_comm with a list of buffers (post_list.cpp).
#ifndef LCI_CORE_POST_LIST_HPP
#define LCI_CORE_POST_LIST_HPP

#include "lci.hpp"

namespace lci
{

// post_comm_x::call_impl's arguments, when buffers or rbuffers is not
// empty: the list's checks, then its posts.
status_t post_list(direction_t direction, int rank, void* local_buffer,
                   size_t size, comp_t local_comp, runtime_t runtime,
                   device_t device, packet_pool_t packet_pool,
                   matching_engine_t matching_engine, mr_t mr,
                   uint64_t remote_disp, rmr_t rmr, tag_t tag,
                   rcomp_t remote_comp, void* user_context,
                   matching_policy_t matching_policy, bool allow_done,
                   bool allow_posted, bool allow_retry,
                   comp_semantic_t comp_semantic, endpoint_t endpoint,
                   buffers_view_t buffers, rbuffers_view_t rbuffers);

}  // namespace lci

#endif  // LCI_CORE_POST_LIST_HPP
