// Every public name of upstream LCI 2's API reference (github.com/uiuc-hpc/lci
// at commit ca88ce2: the operations, resources and attributes of its
// binding and the names of its lci.hpp), compiled against the installed
// package. Each CHECK compiles only if the name exists and takes or gives
// the types upstream documents; RETURNS also checks that the result
// converts to upstream's type. The names this library does not provide
// are listed at the end (kNotProvided) with the reason; they are not
// checked. So the build of this file fails when any other name is
// missing. Nothing here runs.
//
// The CHECK lines were listed from upstream's binding description and
// header with a script; a name moves from kNotProvided into a CHECK when
// it is added.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "lci.hpp"

namespace
{

// A value of type T in an unevaluated operand (declared, never defined).
template <typename T>
T D();

// A functor node for graph_add_node_op.
struct op_t {
  lci::status_t operator()() const;
  void user_context(void*);
};

}  // namespace

#define CHECK(...) \
  static_assert(sizeof(decltype((void)(__VA_ARGS__), 0)) > 0, #__VA_ARGS__)
#define RETURNS(T, ...)                                               \
  static_assert(std::is_convertible<decltype(__VA_ARGS__), T>::value, \
                #__VA_ARGS__ " gives " #T)

// attr_backend_t
// errorcode_t
CHECK(lci::errorcode_t::done_min);
CHECK(lci::errorcode_t::done);
CHECK(lci::errorcode_t::done_backlog);
CHECK(lci::errorcode_t::done_max);
CHECK(lci::errorcode_t::posted_min);
CHECK(lci::errorcode_t::posted);
CHECK(lci::errorcode_t::posted_backlog);
CHECK(lci::errorcode_t::posted_max);
CHECK(lci::errorcode_t::retry_min);
CHECK(lci::errorcode_t::retry);
CHECK(lci::errorcode_t::retry_init);
CHECK(lci::errorcode_t::retry_lock);
CHECK(lci::errorcode_t::retry_nopacket);
CHECK(lci::errorcode_t::retry_nomem);
CHECK(lci::errorcode_t::retry_backlog);
CHECK(lci::errorcode_t::retry_max);
CHECK(lci::errorcode_t::fatal);
// net_opcode_t, net_status_t, net_imm_data_t (the raw network layer)
CHECK(lci::net_opcode_t::SEND);
CHECK(lci::net_opcode_t::RECV);
CHECK(lci::net_opcode_t::WRITE);
CHECK(lci::net_opcode_t::REMOTE_WRITE);
CHECK(lci::net_opcode_t::READ);
CHECK(lci::net_opcode_t::ERROR);
RETURNS(const char*, lci::get_net_opcode_str(D<lci::net_opcode_t>()));
RETURNS(uint32_t, D<lci::net_imm_data_t>());
RETURNS(lci::net_opcode_t, D<lci::net_status_t&>().opcode);
RETURNS(int, D<lci::net_status_t&>().rank);
RETURNS(void*, D<lci::net_status_t&>().user_context);
RETURNS(size_t, D<lci::net_status_t&>().length);
RETURNS(lci::net_imm_data_t, D<lci::net_status_t&>().imm_data);
// net_poll_cq
RETURNS(size_t, lci::net_poll_cq(D<size_t>(), D<lci::net_status_t*>()));
CHECK(lci::net_poll_cq_x(D<size_t>(), D<lci::net_status_t*>())());
CHECK(D<lci::net_poll_cq_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::net_poll_cq_x&>().device(D<lci::device_t>()));
// net_post_recv
RETURNS(lci::error_t,
        lci::net_post_recv(D<void*>(), D<size_t>(), D<lci::mr_t>()));
CHECK(lci::net_post_recv_x(D<void*>(), D<size_t>(), D<lci::mr_t>())());
CHECK(D<lci::net_post_recv_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::net_post_recv_x&>().device(D<lci::device_t>()));
CHECK(D<lci::net_post_recv_x&>().user_context(D<void*>()));
// net_post_sends
RETURNS(lci::error_t, lci::net_post_sends(D<int>(), D<void*>(), D<size_t>()));
CHECK(lci::net_post_sends_x(D<int>(), D<void*>(), D<size_t>())());
CHECK(D<lci::net_post_sends_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::net_post_sends_x&>().device(D<lci::device_t>()));
CHECK(D<lci::net_post_sends_x&>().endpoint(D<lci::endpoint_t>()));
CHECK(D<lci::net_post_sends_x&>().user_context(D<void*>()));
CHECK(D<lci::net_post_sends_x&>().imm_data(D<lci::net_imm_data_t>()));
// net_post_send
RETURNS(lci::error_t,
        lci::net_post_send(D<int>(), D<void*>(), D<size_t>(), D<lci::mr_t>()));
CHECK(lci::net_post_send_x(D<int>(), D<void*>(), D<size_t>(),
                           D<lci::mr_t>())());
CHECK(D<lci::net_post_send_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::net_post_send_x&>().device(D<lci::device_t>()));
CHECK(D<lci::net_post_send_x&>().endpoint(D<lci::endpoint_t>()));
CHECK(D<lci::net_post_send_x&>().user_context(D<void*>()));
CHECK(D<lci::net_post_send_x&>().imm_data(D<lci::net_imm_data_t>()));
// net_post_puts
RETURNS(lci::error_t, lci::net_post_puts(D<int>(), D<void*>(), D<size_t>(),
                                         D<uint64_t>(), D<lci::rmr_t>()));
CHECK(lci::net_post_puts_x(D<int>(), D<void*>(), D<size_t>(), D<uint64_t>(),
                           D<lci::rmr_t>())());
CHECK(D<lci::net_post_puts_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::net_post_puts_x&>().device(D<lci::device_t>()));
CHECK(D<lci::net_post_puts_x&>().endpoint(D<lci::endpoint_t>()));
CHECK(D<lci::net_post_puts_x&>().user_context(D<void*>()));
// net_post_put
RETURNS(lci::error_t,
        lci::net_post_put(D<int>(), D<void*>(), D<size_t>(), D<lci::mr_t>(),
                          D<uint64_t>(), D<lci::rmr_t>()));
CHECK(lci::net_post_put_x(D<int>(), D<void*>(), D<size_t>(), D<lci::mr_t>(),
                          D<uint64_t>(), D<lci::rmr_t>())());
CHECK(D<lci::net_post_put_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::net_post_put_x&>().device(D<lci::device_t>()));
CHECK(D<lci::net_post_put_x&>().endpoint(D<lci::endpoint_t>()));
CHECK(D<lci::net_post_put_x&>().user_context(D<void*>()));
// net_post_putImms
RETURNS(lci::error_t, lci::net_post_putImms(D<int>(), D<void*>(), D<size_t>(),
                                            D<uint64_t>(), D<lci::rmr_t>()));
CHECK(lci::net_post_putImms_x(D<int>(), D<void*>(), D<size_t>(), D<uint64_t>(),
                              D<lci::rmr_t>())());
CHECK(D<lci::net_post_putImms_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::net_post_putImms_x&>().device(D<lci::device_t>()));
CHECK(D<lci::net_post_putImms_x&>().endpoint(D<lci::endpoint_t>()));
CHECK(D<lci::net_post_putImms_x&>().user_context(D<void*>()));
CHECK(D<lci::net_post_putImms_x&>().imm_data(D<lci::net_imm_data_t>()));
// net_post_putImm
RETURNS(lci::error_t,
        lci::net_post_putImm(D<int>(), D<void*>(), D<size_t>(), D<lci::mr_t>(),
                             D<uint64_t>(), D<lci::rmr_t>()));
CHECK(lci::net_post_putImm_x(D<int>(), D<void*>(), D<size_t>(), D<lci::mr_t>(),
                             D<uint64_t>(), D<lci::rmr_t>())());
CHECK(D<lci::net_post_putImm_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::net_post_putImm_x&>().device(D<lci::device_t>()));
CHECK(D<lci::net_post_putImm_x&>().endpoint(D<lci::endpoint_t>()));
CHECK(D<lci::net_post_putImm_x&>().user_context(D<void*>()));
CHECK(D<lci::net_post_putImm_x&>().imm_data(D<lci::net_imm_data_t>()));
// net_post_get
RETURNS(lci::error_t,
        lci::net_post_get(D<int>(), D<void*>(), D<size_t>(), D<lci::mr_t>(),
                          D<uint64_t>(), D<lci::rmr_t>()));
CHECK(lci::net_post_get_x(D<int>(), D<void*>(), D<size_t>(), D<lci::mr_t>(),
                          D<uint64_t>(), D<lci::rmr_t>())());
CHECK(D<lci::net_post_get_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::net_post_get_x&>().device(D<lci::device_t>()));
CHECK(D<lci::net_post_get_x&>().endpoint(D<lci::endpoint_t>()));
CHECK(D<lci::net_post_get_x&>().user_context(D<void*>()));
// broadcast_algorithm_t
CHECK(lci::broadcast_algorithm_t::none);
CHECK(lci::broadcast_algorithm_t::direct);
CHECK(lci::broadcast_algorithm_t::tree);
CHECK(lci::broadcast_algorithm_t::ring);
// reduce_scatter_algorithm_t
CHECK(lci::reduce_scatter_algorithm_t::none);
CHECK(lci::reduce_scatter_algorithm_t::direct);
CHECK(lci::reduce_scatter_algorithm_t::tree);
CHECK(lci::reduce_scatter_algorithm_t::ring);
// allreduce_algorithm_t
CHECK(lci::allreduce_algorithm_t::none);
CHECK(lci::allreduce_algorithm_t::direct);
CHECK(lci::allreduce_algorithm_t::tree);
CHECK(lci::allreduce_algorithm_t::ring);
// direction_t
CHECK(lci::direction_t::OUT);
CHECK(lci::direction_t::IN);
// matching_entry_type_t
CHECK(lci::matching_entry_type_t::send);
CHECK(lci::matching_entry_type_t::recv);
// matching_policy_t
CHECK(lci::matching_policy_t::none);
CHECK(lci::matching_policy_t::rank_only);
CHECK(lci::matching_policy_t::tag_only);
CHECK(lci::matching_policy_t::rank_tag);
CHECK(lci::matching_policy_t::max);
RETURNS(int, D<const lci::option_t<int>&>().get_value_or(1));
RETURNS(bool, D<const lci::option_t<int>&>().get_set_value(D<int*>()));
RETURNS(int, D<const lci::option_t<int>&>().get_value());
RETURNS(bool, D<const lci::option_t<int>&>().is_set());
RETURNS(lci::option_t<int>, lci::option_t<int>(1, false));
RETURNS(int, D<const lci::option_t<int>&>().m_value);
// comp_semantic_t
CHECK(lci::comp_semantic_t::memory);
CHECK(lci::comp_semantic_t::network);
// attr_rdv_protocol_t
CHECK(lci::attr_rdv_protocol_t::auto_select);
CHECK(lci::attr_rdv_protocol_t::write);
CHECK(lci::attr_rdv_protocol_t::writeimm);
// attr_comp_type_t
// attr_cq_type_t
CHECK(lci::attr_cq_type_t::array_atomic);
CHECK(lci::attr_cq_type_t::lcrq);
CHECK(lci::alloc_cq_x().cq_type(D<lci::attr_cq_type_t>()));
RETURNS(lci::attr_cq_type_t, D<lci::global_attr_t&>().cq_type);
// attr_ibv_odp_strategy_t
CHECK(lci::attr_ibv_odp_strategy_t::none);
CHECK(lci::attr_ibv_odp_strategy_t::explicit_odp);
CHECK(lci::attr_ibv_odp_strategy_t::implicit_odp);
RETURNS(lci::attr_ibv_odp_strategy_t,
        D<lci::global_attr_t&>().ibv_odp_strategy);
// attr_ibv_prefetch_strategy_t
CHECK(lci::attr_ibv_prefetch_strategy_t::none);
CHECK(lci::attr_ibv_prefetch_strategy_t::prefetch);
CHECK(lci::attr_ibv_prefetch_strategy_t::prefetch_write);
CHECK(lci::attr_ibv_prefetch_strategy_t::prefetch_no_fault);
RETURNS(lci::attr_ibv_prefetch_strategy_t,
        D<lci::global_attr_t&>().ibv_prefetch_strategy);
// attr_ibv_td_strategy_t
CHECK(lci::attr_ibv_td_strategy_t::none);
CHECK(lci::attr_ibv_td_strategy_t::all_qp);
CHECK(lci::attr_ibv_td_strategy_t::per_qp);
RETURNS(lci::attr_ibv_td_strategy_t, D<lci::global_attr_t&>().ibv_td_strategy);
RETURNS(lci::attr_ibv_td_strategy_t, D<lci::device_attr_t&>().ibv_td_strategy);
RETURNS(lci::attr_ibv_td_strategy_t,
        D<const lci::device_t&>().get_attr_ibv_td_strategy());
CHECK(lci::alloc_device_x().ibv_td_strategy(D<lci::attr_ibv_td_strategy_t>()));
// upstream's switches of default resources
RETURNS(bool, D<lci::global_attr_t&>().alloc_default_matching_engine);
RETURNS(bool, D<lci::runtime_attr_t&>().alloc_default_matching_engine);
RETURNS(bool,
        D<const lci::runtime_t&>().get_attr_alloc_default_matching_engine());
CHECK(lci::alloc_runtime_x().alloc_default_matching_engine(D<bool>()));
CHECK(lci::g_runtime_init_x().alloc_default_matching_engine(D<bool>()));
RETURNS(bool, D<lci::global_attr_t&>().alloc_default_endpoint);
RETURNS(bool, D<lci::global_attr_t&>().alloc_progress_endpoint);
RETURNS(bool, D<lci::device_attr_t&>().alloc_default_endpoint);
RETURNS(bool, D<lci::device_attr_t&>().alloc_progress_endpoint);
RETURNS(bool, D<const lci::device_t&>().get_attr_alloc_default_endpoint());
RETURNS(bool, D<const lci::device_t&>().get_attr_alloc_progress_endpoint());
CHECK(lci::alloc_device_x().alloc_default_endpoint(D<bool>()));
CHECK(lci::alloc_device_x().alloc_progress_endpoint(D<bool>()));
// upstream's settings of its own implementation, accepted and reported
RETURNS(size_t, D<lci::global_attr_t&>().packet_return_threshold);
RETURNS(size_t, D<lci::runtime_attr_t&>().packet_return_threshold);
RETURNS(size_t, D<const lci::runtime_t&>().get_attr_packet_return_threshold());
CHECK(lci::alloc_runtime_x().packet_return_threshold(D<size_t>()));
CHECK(lci::g_runtime_init_x().packet_return_threshold(D<size_t>()));
RETURNS(int, D<lci::global_attr_t&>().imm_nbits_tag);
RETURNS(int, D<lci::runtime_attr_t&>().imm_nbits_tag);
RETURNS(int, D<const lci::runtime_t&>().get_attr_imm_nbits_tag());
CHECK(lci::alloc_runtime_x().imm_nbits_tag(D<int>()));
CHECK(lci::g_runtime_init_x().imm_nbits_tag(D<int>()));
RETURNS(int, D<lci::global_attr_t&>().imm_nbits_rcomp);
RETURNS(int, D<lci::runtime_attr_t&>().imm_nbits_rcomp);
RETURNS(int, D<const lci::runtime_t&>().get_attr_imm_nbits_rcomp());
CHECK(lci::alloc_runtime_x().imm_nbits_rcomp(D<int>()));
CHECK(lci::g_runtime_init_x().imm_nbits_rcomp(D<int>()));
RETURNS(uint64_t, D<lci::runtime_attr_t&>().max_imm_tag);
RETURNS(uint64_t, D<const lci::runtime_t&>().get_attr_max_imm_tag());
RETURNS(uint64_t, D<lci::runtime_attr_t&>().max_imm_rcomp);
RETURNS(uint64_t, D<const lci::runtime_t&>().get_attr_max_imm_rcomp());
RETURNS(uint64_t, D<lci::runtime_attr_t&>().max_rcomp);
RETURNS(uint64_t, D<const lci::runtime_t&>().get_attr_max_rcomp());
RETURNS(double, D<lci::global_attr_t&>().net_send_reserved_pct);
RETURNS(double, D<lci::device_attr_t&>().net_send_reserved_pct);
RETURNS(double, D<const lci::device_t&>().get_attr_net_send_reserved_pct());
CHECK(lci::alloc_device_x().net_send_reserved_pct(D<double>()));
RETURNS(bool, D<lci::global_attr_t&>().use_reg_cache);
RETURNS(bool, D<lci::device_attr_t&>().use_reg_cache);
RETURNS(bool, D<const lci::device_t&>().get_attr_use_reg_cache());
CHECK(lci::alloc_device_x().use_reg_cache(D<bool>()));
// attr_matching_engine_type_t
CHECK(lci::attr_matching_engine_type_t::queue);
CHECK(lci::attr_matching_engine_type_t::map);
RETURNS(lci::attr_matching_engine_type_t,
        D<lci::global_attr_t&>().matching_engine_type);
RETURNS(lci::attr_matching_engine_type_t,
        D<lci::matching_engine_attr_t&>().matching_engine_type);
RETURNS(lci::attr_matching_engine_type_t,
        D<const lci::matching_engine_t&>().get_attr_matching_engine_type());
CHECK(lci::alloc_matching_engine_x().matching_engine_type(
    D<lci::attr_matching_engine_type_t>()));
// every handle of upstream's binding: attr_t, a (non-explicit) void*
// constructor that clients use to keep get_impl() as void*, set_impl
RETURNS(lci::comp_t, static_cast<void*>(nullptr));
RETURNS(lci::comp_t, nullptr);
CHECK(D<lci::comp_t&>().set_impl(D<lci::comp_impl_t*>()));
RETURNS(lci::comp_attr_t, D<lci::comp_t::attr_t&>());
RETURNS(lci::mr_t, static_cast<void*>(nullptr));
CHECK(D<lci::mr_t&>().set_impl(D<lci::mr_impl_t*>()));
RETURNS(lci::runtime_t, static_cast<void*>(nullptr));
RETURNS(lci::runtime_attr_t, D<lci::runtime_t::attr_t&>());
CHECK(D<lci::runtime_t&>().set_impl(D<lci::runtime_impl_t*>()));
RETURNS(lci::device_t, static_cast<void*>(nullptr));
RETURNS(lci::device_attr_t, D<lci::device_t::attr_t&>());
RETURNS(lci::packet_pool_t, static_cast<void*>(nullptr));
RETURNS(lci::matching_engine_t, static_cast<void*>(nullptr));
RETURNS(lci::net_context_t, static_cast<void*>(nullptr));
RETURNS(lci::net_context_attr_t, D<lci::net_context_t::attr_t&>());
RETURNS(lci::endpoint_t, static_cast<void*>(nullptr));
RETURNS(lci::endpoint_attr_t, D<lci::endpoint_t::attr_t&>());
// lci.hpp's hand-written part: names and types
CHECK(D<const lci::peer_failure_error&>().failed_rank());
CHECK(lci::peer_failure_error(D<int>(), D<const std::string&>()));
RETURNS(std::runtime_error&, D<lci::peer_failure_error&>());
RETURNS(const char*, lci::get_errorcode_str(D<lci::errorcode_t>()));
CHECK(lci::error_t());
CHECK(lci::error_t(lci::errorcode_t::done));
CHECK(D<lci::error_t&>().errorcode);
CHECK(D<lci::error_t&>().reset_retry());
RETURNS(bool, D<const lci::error_t&>().is_done());
RETURNS(bool, D<const lci::error_t&>().is_posted());
RETURNS(bool, D<const lci::error_t&>().is_retry());
RETURNS(const char*, D<const lci::error_t&>().get_str());
RETURNS(const char*,
        lci::get_broadcast_algorithm_str(D<lci::broadcast_algorithm_t>()));
CHECK(lci::get_reduce_scatter_algorithm_str);
CHECK(lci::get_allreduce_algorithm_str);
RETURNS(lci::mr_t, lci::MR_HOST);
RETURNS(lci::mr_t, lci::MR_DEVICE);
RETURNS(lci::mr_t, lci::MR_UNKNOWN);
CHECK(D<lci::rmr_t&>().base);
CHECK(D<lci::rmr_t&>().opaque_rkey);
RETURNS(bool, D<const lci::rmr_t&>().is_empty());
RETURNS(lci::rmr_t, lci::RMR_NULL);
RETURNS(uint64_t, D<lci::tag_t>());
RETURNS(uint32_t, D<lci::rcomp_t>());
RETURNS(int, lci::ANY_SOURCE);
RETURNS(lci::tag_t, lci::ANY_TAG);
RETURNS(uint64_t, D<lci::matching_entry_key_t>());
RETURNS(void*, D<lci::matching_entry_val_t>());
RETURNS(void*, D<lci::allocator_base_t&>().allocate(D<size_t>()));
CHECK(D<lci::allocator_base_t&>().deallocate(D<void*>()));
RETURNS(lci::allocator_base_t*, &lci::g_allocator_default);
RETURNS(lci::allocator_base_t&, D<lci::allocator_default_t&>());
CHECK(D<lci::status_t&>().error);
CHECK(D<lci::status_t&>().rank);
CHECK(D<lci::status_t&>().buffer);
CHECK(D<lci::status_t&>().size);
CHECK(D<lci::status_t&>().tag);
CHECK(D<lci::status_t&>().user_context);
CHECK(lci::status_t());
CHECK(lci::status_t(lci::errorcode_t::done));
CHECK(lci::status_t(D<void*>()));
CHECK(D<lci::status_t&>().set_done());
CHECK(D<lci::status_t&>().set_posted());
CHECK(D<lci::status_t&>().set_retry());
RETURNS(bool, D<const lci::status_t&>().is_done());
RETURNS(bool, D<const lci::status_t&>().is_posted());
RETURNS(bool, D<const lci::status_t&>().is_retry());
RETURNS(lci::error_t, D<const lci::status_t&>().get_error());
RETURNS(int, D<const lci::status_t&>().get_rank());
RETURNS(void*, D<const lci::status_t&>().get_buffer());
RETURNS(size_t, D<const lci::status_t&>().get_size());
RETURNS(lci::tag_t, D<const lci::status_t&>().get_tag());
RETURNS(void*, D<const lci::status_t&>().get_user_context());
RETURNS(lci::comp_t, lci::COMP_NULL);
RETURNS(lci::comp_t, lci::COMP_NULL_EXPECT_DONE);
RETURNS(lci::comp_t, lci::COMP_NULL_RETRY);
RETURNS(lci::comp_t, lci::COMP_NULL_EXPECT_DONE_OR_RETRY);
CHECK(D<lci::comp_impl_t&>().signal(D<lci::status_t>()));
RETURNS(lci::comp_handler_t, static_cast<void (*)(lci::status_t)>(nullptr));
RETURNS(
    lci::reduce_op_t,
    static_cast<void (*)(const void*, const void*, void*, size_t)>(nullptr));
RETURNS(void*, D<lci::graph_node_t>());
RETURNS(lci::graph_node_t, lci::GRAPH_START);
RETURNS(lci::graph_node_run_cb_t, lci::GRAPH_NODE_DUMMY_CB);
RETURNS(lci::graph_node_run_cb_t, &lci::graph_execute_op_fn<op_t>);
RETURNS(lci::graph_node_free_cb_t, &lci::graph_free_op_fn<op_t>);
RETURNS(lci::graph_node_t, lci::GRAPH_END);
RETURNS(lci::graph_node_run_cb_t,
        static_cast<lci::status_t (*)(void*)>(nullptr));
RETURNS(lci::graph_node_free_cb_t, static_cast<void (*)(void*)>(nullptr));
CHECK(D<lci::graph_edge_run_cb_t>());
CHECK(lci::global_initialize());
CHECK(lci::global_finalize());
RETURNS(int, lci::get_rank_me());
RETURNS(int, lci::get_rank_n());
RETURNS(lci::global_attr_t, lci::get_g_default_attr());
CHECK(lci::set_g_default_attr(D<const lci::global_attr_t&>()));
RETURNS(lci::graph_node_t,
        lci::graph_add_node_op(D<lci::comp_t>(), D<const op_t&>()));
// global_attr_t
CHECK(D<lci::global_attr_t&>().rdv_protocol);
CHECK(D<lci::global_attr_t&>().alloc_default_device);
CHECK(D<lci::global_attr_t&>().alloc_default_packet_pool);
CHECK(D<lci::global_attr_t&>().packet_size);
CHECK(D<lci::global_attr_t&>().npackets);
CHECK(D<lci::global_attr_t&>().cq_type);
CHECK(D<lci::global_attr_t&>().ibv_gid_idx);
CHECK(D<lci::global_attr_t&>().ibv_force_gid_auto_select);
CHECK(D<lci::global_attr_t&>().backend);
CHECK(D<lci::global_attr_t&>().ofi_provider_name);
CHECK(D<lci::global_attr_t&>().max_msg_size);
CHECK(D<lci::global_attr_t&>().max_inject_size);
CHECK(D<lci::global_attr_t&>().net_max_sends);
CHECK(D<lci::global_attr_t&>().net_max_recvs);
CHECK(D<lci::global_attr_t&>().net_max_cqes);
CHECK(D<lci::global_attr_t&>().shm_ring_size);
// alloc_runtime
CHECK(lci::alloc_runtime());
RETURNS(lci::runtime_t, lci::alloc_runtime());
CHECK(lci::alloc_runtime_x()());
CHECK(D<lci::alloc_runtime_x&>().rdv_protocol(D<lci::attr_rdv_protocol_t>()));
CHECK(D<lci::alloc_runtime_x&>().alloc_default_device(D<bool>()));
CHECK(D<lci::alloc_runtime_x&>().alloc_default_packet_pool(D<bool>()));
// free_runtime
CHECK(lci::free_runtime(D<lci::runtime_t*>()));
CHECK(lci::free_runtime_x(D<lci::runtime_t*>())());
// g_runtime_init
CHECK(lci::g_runtime_init());
RETURNS(lci::runtime_t, lci::g_runtime_init());
CHECK(lci::g_runtime_init_x()());
CHECK(D<lci::g_runtime_init_x&>().rdv_protocol(D<lci::attr_rdv_protocol_t>()));
CHECK(D<lci::g_runtime_init_x&>().alloc_default_device(D<bool>()));
CHECK(D<lci::g_runtime_init_x&>().alloc_default_packet_pool(D<bool>()));
// g_runtime_fina
CHECK(lci::g_runtime_fina());
CHECK(lci::g_runtime_fina_x()());
// get_g_runtime
CHECK(lci::get_g_runtime());
RETURNS(lci::runtime_t, lci::get_g_runtime());
CHECK(lci::get_g_runtime_x()());
// alloc_packet_pool
CHECK(lci::alloc_packet_pool());
RETURNS(lci::packet_pool_t, lci::alloc_packet_pool());
CHECK(lci::alloc_packet_pool_x()());
CHECK(D<lci::alloc_packet_pool_x&>().packet_size(D<size_t>()));
CHECK(D<lci::alloc_packet_pool_x&>().npackets(D<size_t>()));
CHECK(D<lci::alloc_packet_pool_x&>().runtime(D<lci::runtime_t>()));
// free_packet_pool
CHECK(lci::free_packet_pool(D<lci::packet_pool_t*>()));
CHECK(lci::free_packet_pool_x(D<lci::packet_pool_t*>())());
CHECK(D<lci::free_packet_pool_x&>().runtime(D<lci::runtime_t>()));
// register_packet_pool
CHECK(lci::register_packet_pool(D<lci::packet_pool_t>(), D<lci::device_t>()));
CHECK(lci::register_packet_pool_x(D<lci::packet_pool_t>(),
                                  D<lci::device_t>())());
CHECK(D<lci::register_packet_pool_x&>().runtime(D<lci::runtime_t>()));
// deregister_packet_pool
CHECK(lci::deregister_packet_pool(D<lci::packet_pool_t>(), D<lci::device_t>()));
CHECK(lci::deregister_packet_pool_x(D<lci::packet_pool_t>(),
                                    D<lci::device_t>())());
CHECK(D<lci::deregister_packet_pool_x&>().runtime(D<lci::runtime_t>()));
// get_upacket
CHECK(lci::get_upacket());
RETURNS(void*, lci::get_upacket());
CHECK(lci::get_upacket_x()());
CHECK(D<lci::get_upacket_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::get_upacket_x&>().packet_pool(D<lci::packet_pool_t>()));
// put_upacket
CHECK(lci::put_upacket(D<void*>()));
CHECK(lci::put_upacket_x(D<void*>())());
CHECK(D<lci::put_upacket_x&>().runtime(D<lci::runtime_t>()));
// alloc_matching_engine
CHECK(lci::alloc_matching_engine());
RETURNS(lci::matching_engine_t, lci::alloc_matching_engine());
CHECK(lci::alloc_matching_engine_x()());
CHECK(D<lci::alloc_matching_engine_x&>().runtime(D<lci::runtime_t>()));
// free_matching_engine
CHECK(lci::free_matching_engine(D<lci::matching_engine_t*>()));
CHECK(lci::free_matching_engine_x(D<lci::matching_engine_t*>())());
CHECK(D<lci::free_matching_engine_x&>().runtime(D<lci::runtime_t>()));
// matching_engine_insert
CHECK(lci::matching_engine_insert(D<lci::matching_engine_t>(),
                                  D<lci::matching_entry_key_t>(),
                                  D<lci::matching_entry_val_t>(),
                                  D<lci::matching_entry_type_t>()));
RETURNS(lci::matching_entry_val_t,
        lci::matching_engine_insert(D<lci::matching_engine_t>(),
                                    D<lci::matching_entry_key_t>(),
                                    D<lci::matching_entry_val_t>(),
                                    D<lci::matching_entry_type_t>()));
CHECK(lci::matching_engine_insert_x(D<lci::matching_engine_t>(),
                                    D<lci::matching_entry_key_t>(),
                                    D<lci::matching_entry_val_t>(),
                                    D<lci::matching_entry_type_t>())());
CHECK(D<lci::matching_engine_insert_x&>().runtime(D<lci::runtime_t>()));
// set_allocator
CHECK(lci::set_allocator(D<lci::allocator_base_t*>()));
CHECK(lci::set_allocator_x(D<lci::allocator_base_t*>())());
CHECK(D<lci::set_allocator_x&>().runtime(D<lci::runtime_t>()));
// get_allocator
CHECK(lci::get_allocator());
RETURNS(lci::allocator_base_t*, lci::get_allocator());
CHECK(lci::get_allocator_x()());
CHECK(D<lci::get_allocator_x&>().runtime(D<lci::runtime_t>()));
// get_default_net_context
CHECK(lci::get_default_net_context());
RETURNS(lci::net_context_t, lci::get_default_net_context());
CHECK(lci::get_default_net_context_x()());
CHECK(D<lci::get_default_net_context_x&>().runtime(D<lci::runtime_t>()));
// get_default_device
CHECK(lci::get_default_device());
RETURNS(lci::device_t, lci::get_default_device());
CHECK(lci::get_default_device_x()());
CHECK(D<lci::get_default_device_x&>().runtime(D<lci::runtime_t>()));
// get_default_endpoint
CHECK(lci::get_default_endpoint());
RETURNS(lci::endpoint_t, lci::get_default_endpoint());
CHECK(lci::get_default_endpoint_x()());
CHECK(D<lci::get_default_endpoint_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::get_default_endpoint_x&>().device(D<lci::device_t>()));
// get_default_packet_pool
CHECK(lci::get_default_packet_pool());
RETURNS(lci::packet_pool_t, lci::get_default_packet_pool());
CHECK(lci::get_default_packet_pool_x()());
CHECK(D<lci::get_default_packet_pool_x&>().runtime(D<lci::runtime_t>()));
// get_default_matching_engine
CHECK(lci::get_default_matching_engine());
RETURNS(lci::matching_engine_t, lci::get_default_matching_engine());
CHECK(lci::get_default_matching_engine_x()());
CHECK(D<lci::get_default_matching_engine_x&>().runtime(D<lci::runtime_t>()));
// get_max_bcopy_size
CHECK(lci::get_max_bcopy_size());
RETURNS(size_t, lci::get_max_bcopy_size());
CHECK(lci::get_max_bcopy_size_x()());
CHECK(D<lci::get_max_bcopy_size_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::get_max_bcopy_size_x&>().packet_pool(D<lci::packet_pool_t>()));
// barrier
CHECK(lci::barrier());
CHECK(lci::barrier_x()());
CHECK(D<lci::barrier_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::barrier_x&>().device(D<lci::device_t>()));
CHECK(D<lci::barrier_x&>().matching_engine(D<lci::matching_engine_t>()));
CHECK(D<lci::barrier_x&>().comp(D<lci::comp_t>()));
// broadcast
CHECK(lci::broadcast(D<void*>(), D<size_t>(), D<int>()));
CHECK(lci::broadcast_x(D<void*>(), D<size_t>(), D<int>())());
CHECK(D<lci::broadcast_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::broadcast_x&>().device(D<lci::device_t>()));
CHECK(D<lci::broadcast_x&>().matching_engine(D<lci::matching_engine_t>()));
CHECK(D<lci::broadcast_x&>().comp(D<lci::comp_t>()));
CHECK(D<lci::broadcast_x&>().algorithm(D<lci::broadcast_algorithm_t>()));
// reduce
CHECK(lci::reduce(D<const void*>(), D<void*>(), D<size_t>(), D<size_t>(),
                  D<lci::reduce_op_t>(), D<int>()));
CHECK(lci::reduce_x(D<const void*>(), D<void*>(), D<size_t>(), D<size_t>(),
                    D<lci::reduce_op_t>(), D<int>())());
CHECK(D<lci::reduce_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::reduce_x&>().device(D<lci::device_t>()));
CHECK(D<lci::reduce_x&>().matching_engine(D<lci::matching_engine_t>()));
// reduce_scatter
CHECK(lci::reduce_scatter(D<const void*>(), D<void*>(), D<size_t>(),
                          D<size_t>(), D<lci::reduce_op_t>()));
CHECK(lci::reduce_scatter_x(D<const void*>(), D<void*>(), D<size_t>(),
                            D<size_t>(), D<lci::reduce_op_t>())());
CHECK(D<lci::reduce_scatter_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::reduce_scatter_x&>().device(D<lci::device_t>()));
CHECK(D<lci::reduce_scatter_x&>().matching_engine(D<lci::matching_engine_t>()));
CHECK(D<lci::reduce_scatter_x&>().comp(D<lci::comp_t>()));
CHECK(D<lci::reduce_scatter_x&>().algorithm(
    D<lci::reduce_scatter_algorithm_t>()));
// allreduce
CHECK(lci::allreduce(D<const void*>(), D<void*>(), D<size_t>(), D<size_t>(),
                     D<lci::reduce_op_t>()));
CHECK(lci::allreduce_x(D<const void*>(), D<void*>(), D<size_t>(), D<size_t>(),
                       D<lci::reduce_op_t>())());
CHECK(D<lci::allreduce_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::allreduce_x&>().device(D<lci::device_t>()));
CHECK(D<lci::allreduce_x&>().matching_engine(D<lci::matching_engine_t>()));
CHECK(D<lci::allreduce_x&>().comp(D<lci::comp_t>()));
CHECK(D<lci::allreduce_x&>().algorithm(D<lci::allreduce_algorithm_t>()));
// allgather
CHECK(lci::allgather(D<const void*>(), D<void*>(), D<size_t>()));
CHECK(lci::allgather_x(D<const void*>(), D<void*>(), D<size_t>())());
CHECK(D<lci::allgather_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::allgather_x&>().device(D<lci::device_t>()));
CHECK(D<lci::allgather_x&>().matching_engine(D<lci::matching_engine_t>()));
// alltoall
CHECK(lci::alltoall(D<const void*>(), D<void*>(), D<size_t>()));
CHECK(lci::alltoall_x(D<const void*>(), D<void*>(), D<size_t>())());
CHECK(D<lci::alltoall_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::alltoall_x&>().device(D<lci::device_t>()));
CHECK(D<lci::alltoall_x&>().matching_engine(D<lci::matching_engine_t>()));
CHECK(D<lci::alltoall_x&>().comp(D<lci::comp_t>()));
// post_comm
CHECK(lci::post_comm(D<lci::direction_t>(), D<int>(), D<void*>(), D<size_t>(),
                     D<lci::comp_t>()));
RETURNS(lci::status_t,
        lci::post_comm(D<lci::direction_t>(), D<int>(), D<void*>(), D<size_t>(),
                       D<lci::comp_t>()));
CHECK(lci::post_comm_x(D<lci::direction_t>(), D<int>(), D<void*>(), D<size_t>(),
                       D<lci::comp_t>())());
CHECK(D<lci::post_comm_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::post_comm_x&>().device(D<lci::device_t>()));
CHECK(D<lci::post_comm_x&>().endpoint(D<lci::endpoint_t>()));
CHECK(D<lci::post_comm_x&>().packet_pool(D<lci::packet_pool_t>()));
CHECK(D<lci::post_comm_x&>().matching_engine(D<lci::matching_engine_t>()));
CHECK(D<lci::post_comm_x&>().comp_semantic(D<lci::comp_semantic_t>()));
CHECK(D<lci::post_comm_x&>().mr(D<lci::mr_t>()));
CHECK(D<lci::post_comm_x&>().remote_disp(D<uintptr_t>()));
CHECK(D<lci::post_comm_x&>().rmr(D<lci::rmr_t>()));
CHECK(D<lci::post_comm_x&>().tag(D<lci::tag_t>()));
CHECK(D<lci::post_comm_x&>().remote_comp(D<lci::rcomp_t>()));
CHECK(D<lci::post_comm_x&>().user_context(D<void*>()));
CHECK(D<lci::post_comm_x&>().matching_policy(D<lci::matching_policy_t>()));
CHECK(D<lci::post_comm_x&>().allow_done(D<bool>()));
CHECK(D<lci::post_comm_x&>().allow_posted(D<bool>()));
CHECK(D<lci::post_comm_x&>().allow_retry(D<bool>()));
// post_am
CHECK(lci::post_am(D<int>(), D<void*>(), D<size_t>(), D<lci::comp_t>(),
                   D<lci::rcomp_t>()));
RETURNS(lci::status_t, lci::post_am(D<int>(), D<void*>(), D<size_t>(),
                                    D<lci::comp_t>(), D<lci::rcomp_t>()));
CHECK(lci::post_am_x(D<int>(), D<void*>(), D<size_t>(), D<lci::comp_t>(),
                     D<lci::rcomp_t>())());
CHECK(D<lci::post_am_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::post_am_x&>().device(D<lci::device_t>()));
CHECK(D<lci::post_am_x&>().endpoint(D<lci::endpoint_t>()));
CHECK(D<lci::post_am_x&>().packet_pool(D<lci::packet_pool_t>()));
CHECK(D<lci::post_am_x&>().comp_semantic(D<lci::comp_semantic_t>()));
CHECK(D<lci::post_am_x&>().mr(D<lci::mr_t>()));
CHECK(D<lci::post_am_x&>().tag(D<lci::tag_t>()));
CHECK(D<lci::post_am_x&>().user_context(D<void*>()));
CHECK(D<lci::post_am_x&>().allow_done(D<bool>()));
CHECK(D<lci::post_am_x&>().allow_posted(D<bool>()));
CHECK(D<lci::post_am_x&>().allow_retry(D<bool>()));
// post_send
CHECK(lci::post_send(D<int>(), D<void*>(), D<size_t>(), D<lci::tag_t>(),
                     D<lci::comp_t>()));
RETURNS(lci::status_t, lci::post_send(D<int>(), D<void*>(), D<size_t>(),
                                      D<lci::tag_t>(), D<lci::comp_t>()));
CHECK(lci::post_send_x(D<int>(), D<void*>(), D<size_t>(), D<lci::tag_t>(),
                       D<lci::comp_t>())());
CHECK(D<lci::post_send_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::post_send_x&>().device(D<lci::device_t>()));
CHECK(D<lci::post_send_x&>().endpoint(D<lci::endpoint_t>()));
CHECK(D<lci::post_send_x&>().packet_pool(D<lci::packet_pool_t>()));
CHECK(D<lci::post_send_x&>().matching_engine(D<lci::matching_engine_t>()));
CHECK(D<lci::post_send_x&>().comp_semantic(D<lci::comp_semantic_t>()));
CHECK(D<lci::post_send_x&>().mr(D<lci::mr_t>()));
CHECK(D<lci::post_send_x&>().user_context(D<void*>()));
CHECK(D<lci::post_send_x&>().matching_policy(D<lci::matching_policy_t>()));
CHECK(D<lci::post_send_x&>().allow_done(D<bool>()));
CHECK(D<lci::post_send_x&>().allow_posted(D<bool>()));
CHECK(D<lci::post_send_x&>().allow_retry(D<bool>()));
// post_recv
CHECK(lci::post_recv(D<int>(), D<void*>(), D<size_t>(), D<lci::tag_t>(),
                     D<lci::comp_t>()));
RETURNS(lci::status_t, lci::post_recv(D<int>(), D<void*>(), D<size_t>(),
                                      D<lci::tag_t>(), D<lci::comp_t>()));
CHECK(lci::post_recv_x(D<int>(), D<void*>(), D<size_t>(), D<lci::tag_t>(),
                       D<lci::comp_t>())());
CHECK(D<lci::post_recv_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::post_recv_x&>().device(D<lci::device_t>()));
CHECK(D<lci::post_recv_x&>().endpoint(D<lci::endpoint_t>()));
CHECK(D<lci::post_recv_x&>().packet_pool(D<lci::packet_pool_t>()));
CHECK(D<lci::post_recv_x&>().matching_engine(D<lci::matching_engine_t>()));
CHECK(D<lci::post_recv_x&>().comp_semantic(D<lci::comp_semantic_t>()));
CHECK(D<lci::post_recv_x&>().mr(D<lci::mr_t>()));
CHECK(D<lci::post_recv_x&>().user_context(D<void*>()));
CHECK(D<lci::post_recv_x&>().matching_policy(D<lci::matching_policy_t>()));
CHECK(D<lci::post_recv_x&>().allow_done(D<bool>()));
CHECK(D<lci::post_recv_x&>().allow_posted(D<bool>()));
CHECK(D<lci::post_recv_x&>().allow_retry(D<bool>()));
// post_put
CHECK(lci::post_put(D<int>(), D<void*>(), D<size_t>(), D<lci::comp_t>(),
                    D<uintptr_t>(), D<lci::rmr_t>()));
RETURNS(lci::status_t,
        lci::post_put(D<int>(), D<void*>(), D<size_t>(), D<lci::comp_t>(),
                      D<uintptr_t>(), D<lci::rmr_t>()));
CHECK(lci::post_put_x(D<int>(), D<void*>(), D<size_t>(), D<lci::comp_t>(),
                      D<uintptr_t>(), D<lci::rmr_t>())());
CHECK(D<lci::post_put_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::post_put_x&>().device(D<lci::device_t>()));
CHECK(D<lci::post_put_x&>().endpoint(D<lci::endpoint_t>()));
CHECK(D<lci::post_put_x&>().packet_pool(D<lci::packet_pool_t>()));
CHECK(D<lci::post_put_x&>().comp_semantic(D<lci::comp_semantic_t>()));
CHECK(D<lci::post_put_x&>().mr(D<lci::mr_t>()));
CHECK(D<lci::post_put_x&>().tag(D<lci::tag_t>()));
CHECK(D<lci::post_put_x&>().remote_comp(D<lci::rcomp_t>()));
CHECK(D<lci::post_put_x&>().user_context(D<void*>()));
CHECK(D<lci::post_put_x&>().allow_done(D<bool>()));
CHECK(D<lci::post_put_x&>().allow_posted(D<bool>()));
CHECK(D<lci::post_put_x&>().allow_retry(D<bool>()));
// post_get
CHECK(lci::post_get(D<int>(), D<void*>(), D<size_t>(), D<lci::comp_t>(),
                    D<uintptr_t>(), D<lci::rmr_t>()));
RETURNS(lci::status_t,
        lci::post_get(D<int>(), D<void*>(), D<size_t>(), D<lci::comp_t>(),
                      D<uintptr_t>(), D<lci::rmr_t>()));
CHECK(lci::post_get_x(D<int>(), D<void*>(), D<size_t>(), D<lci::comp_t>(),
                      D<uintptr_t>(), D<lci::rmr_t>())());
CHECK(D<lci::post_get_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::post_get_x&>().device(D<lci::device_t>()));
CHECK(D<lci::post_get_x&>().endpoint(D<lci::endpoint_t>()));
CHECK(D<lci::post_get_x&>().packet_pool(D<lci::packet_pool_t>()));
CHECK(D<lci::post_get_x&>().comp_semantic(D<lci::comp_semantic_t>()));
CHECK(D<lci::post_get_x&>().mr(D<lci::mr_t>()));
CHECK(D<lci::post_get_x&>().tag(D<lci::tag_t>()));
CHECK(D<lci::post_get_x&>().remote_comp(D<lci::rcomp_t>()));
CHECK(D<lci::post_get_x&>().user_context(D<void*>()));
CHECK(D<lci::post_get_x&>().allow_done(D<bool>()));
CHECK(D<lci::post_get_x&>().allow_posted(D<bool>()));
CHECK(D<lci::post_get_x&>().allow_retry(D<bool>()));
// progress
CHECK(lci::progress());
RETURNS(lci::error_t, lci::progress());
CHECK(lci::progress_x()());
CHECK(D<lci::progress_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::progress_x&>().device(D<lci::device_t>()));
// test_drained
CHECK(lci::test_drained());
RETURNS(lci::error_t, lci::test_drained());
CHECK(lci::test_drained_x()());
CHECK(D<lci::test_drained_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::test_drained_x&>().device(D<lci::device_t>()));
// wait_drained
CHECK(lci::wait_drained());
CHECK(lci::wait_drained_x()());
CHECK(D<lci::wait_drained_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::wait_drained_x&>().device(D<lci::device_t>()));
// free_comp
CHECK(lci::free_comp(D<lci::comp_t*>()));
CHECK(lci::free_comp_x(D<lci::comp_t*>())());
// comp_signal
CHECK(lci::comp_signal(D<lci::comp_t>(), D<lci::status_t>()));
CHECK(lci::comp_signal_x(D<lci::comp_t>(), D<lci::status_t>())());
// reserve_rcomps
CHECK(lci::reserve_rcomps(D<lci::rcomp_t>()));
RETURNS(lci::rcomp_t, lci::reserve_rcomps(D<lci::rcomp_t>()));
CHECK(lci::reserve_rcomps_x(D<lci::rcomp_t>())());
CHECK(D<lci::reserve_rcomps_x&>().runtime(D<lci::runtime_t>()));
// register_rcomp
CHECK(lci::register_rcomp(D<lci::comp_t>()));
RETURNS(lci::rcomp_t, lci::register_rcomp(D<lci::comp_t>()));
CHECK(lci::register_rcomp_x(D<lci::comp_t>())());
CHECK(D<lci::register_rcomp_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::register_rcomp_x&>().rcomp(D<lci::rcomp_t>()));
// deregister_rcomp
CHECK(lci::deregister_rcomp(D<lci::rcomp_t>()));
CHECK(lci::deregister_rcomp_x(D<lci::rcomp_t>())());
CHECK(D<lci::deregister_rcomp_x&>().runtime(D<lci::runtime_t>()));
// alloc_sync
CHECK(lci::alloc_sync());
RETURNS(lci::comp_t, lci::alloc_sync());
CHECK(lci::alloc_sync_x()());
CHECK(D<lci::alloc_sync_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::alloc_sync_x&>().threshold(D<int>()));
CHECK(D<lci::alloc_sync_x&>().zero_copy_am(D<bool>()));
// sync_test
CHECK(lci::sync_test(D<lci::comp_t>(), D<lci::status_t*>()));
RETURNS(bool, lci::sync_test(D<lci::comp_t>(), D<lci::status_t*>()));
CHECK(lci::sync_test_x(D<lci::comp_t>(), D<lci::status_t*>())());
// sync_wait
CHECK(lci::sync_wait(D<lci::comp_t>(), D<lci::status_t*>()));
CHECK(lci::sync_wait_x(D<lci::comp_t>(), D<lci::status_t*>())());
CHECK(D<lci::sync_wait_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::sync_wait_x&>().do_progress(D<bool>()));
CHECK(D<lci::sync_wait_x&>().device(D<lci::device_t>()));
// alloc_counter
CHECK(lci::alloc_counter());
RETURNS(lci::comp_t, lci::alloc_counter());
CHECK(lci::alloc_counter_x()());
CHECK(D<lci::alloc_counter_x&>().runtime(D<lci::runtime_t>()));
// counter_get
CHECK(lci::counter_get(D<lci::comp_t>()));
RETURNS(int64_t, lci::counter_get(D<lci::comp_t>()));
CHECK(lci::counter_get_x(D<lci::comp_t>())());
// counter_set
CHECK(lci::counter_set(D<lci::comp_t>(), D<int64_t>()));
CHECK(lci::counter_set_x(D<lci::comp_t>(), D<int64_t>())());
// alloc_cq
CHECK(lci::alloc_cq());
RETURNS(lci::comp_t, lci::alloc_cq());
CHECK(lci::alloc_cq_x()());
CHECK(D<lci::alloc_cq_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::alloc_cq_x&>().default_length(D<int>()));
CHECK(D<lci::alloc_cq_x&>().zero_copy_am(D<bool>()));
// cq_pop
CHECK(lci::cq_pop(D<lci::comp_t>()));
RETURNS(lci::status_t, lci::cq_pop(D<lci::comp_t>()));
CHECK(lci::cq_pop_x(D<lci::comp_t>())());
// alloc_handler
CHECK(lci::alloc_handler(D<lci::comp_handler_t>()));
RETURNS(lci::comp_t, lci::alloc_handler(D<lci::comp_handler_t>()));
CHECK(lci::alloc_handler_x(D<lci::comp_handler_t>())());
CHECK(D<lci::alloc_handler_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::alloc_handler_x&>().zero_copy_am(D<bool>()));
// alloc_graph
CHECK(lci::alloc_graph());
RETURNS(lci::comp_t, lci::alloc_graph());
CHECK(lci::alloc_graph_x()());
CHECK(D<lci::alloc_graph_x&>().comp(D<lci::comp_t>()));
CHECK(D<lci::alloc_graph_x&>().runtime(D<lci::runtime_t>()));
// graph_add_node
CHECK(lci::graph_add_node(D<lci::comp_t>(), D<lci::graph_node_run_cb_t>()));
RETURNS(lci::graph_node_t,
        lci::graph_add_node(D<lci::comp_t>(), D<lci::graph_node_run_cb_t>()));
CHECK(lci::graph_add_node_x(D<lci::comp_t>(), D<lci::graph_node_run_cb_t>())());
CHECK(D<lci::graph_add_node_x&>().value(D<void*>()));
CHECK(D<lci::graph_add_node_x&>().free_cb(D<lci::graph_node_free_cb_t>()));
// graph_add_edge
CHECK(lci::graph_add_edge(D<lci::comp_t>(), D<lci::graph_node_t>(),
                          D<lci::graph_node_t>()));
CHECK(lci::graph_add_edge_x(D<lci::comp_t>(), D<lci::graph_node_t>(),
                            D<lci::graph_node_t>())());
CHECK(D<lci::graph_add_edge_x&>().fn(D<lci::graph_edge_run_cb_t>()));
// graph_node_mark_complete
CHECK(lci::graph_node_mark_complete(D<lci::graph_node_t>()));
CHECK(lci::graph_node_mark_complete_x(D<lci::graph_node_t>())());
CHECK(D<lci::graph_node_mark_complete_x&>().status(D<lci::status_t>()));
// graph_start
CHECK(lci::graph_start(D<lci::comp_t>()));
CHECK(lci::graph_start_x(D<lci::comp_t>())());
// graph_test
CHECK(lci::graph_test(D<lci::comp_t>()));
RETURNS(lci::status_t, lci::graph_test(D<lci::comp_t>()));
CHECK(lci::graph_test_x(D<lci::comp_t>())());
// alloc_net_context
CHECK(lci::alloc_net_context());
RETURNS(lci::net_context_t, lci::alloc_net_context());
CHECK(lci::alloc_net_context_x()());
CHECK(D<lci::alloc_net_context_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::alloc_net_context_x&>().ofi_provider_name(D<std::string>()));
CHECK(D<lci::alloc_net_context_x&>().max_msg_size(D<size_t>()));
CHECK(D<lci::alloc_net_context_x&>().max_inject_size(D<size_t>()));
CHECK(D<lci::alloc_net_context_x&>().ibv_gid_idx(D<int>()));
CHECK(D<lci::alloc_net_context_x&>().ibv_force_gid_auto_select(D<bool>()));
CHECK(D<lci::alloc_net_context_x&>().ibv_odp_strategy(
    D<lci::attr_ibv_odp_strategy_t>()));
CHECK(D<lci::alloc_net_context_x&>().ibv_prefetch_strategy(
    D<lci::attr_ibv_prefetch_strategy_t>()));
// free_net_context
CHECK(lci::free_net_context(D<lci::net_context_t*>()));
CHECK(lci::free_net_context_x(D<lci::net_context_t*>())());
CHECK(D<lci::free_net_context_x&>().runtime(D<lci::runtime_t>()));
// alloc_device
CHECK(lci::alloc_device());
RETURNS(lci::device_t, lci::alloc_device());
CHECK(lci::alloc_device_x()());
CHECK(D<lci::alloc_device_x&>().net_max_sends(D<size_t>()));
CHECK(D<lci::alloc_device_x&>().net_max_recvs(D<size_t>()));
CHECK(D<lci::alloc_device_x&>().net_max_cqes(D<size_t>()));
CHECK(D<lci::alloc_device_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::alloc_device_x&>().net_context(D<lci::net_context_t>()));
CHECK(D<lci::alloc_device_x&>().packet_pool(D<lci::packet_pool_t>()));
// free_device
CHECK(lci::free_device(D<lci::device_t*>()));
CHECK(lci::free_device_x(D<lci::device_t*>())());
CHECK(D<lci::free_device_x&>().runtime(D<lci::runtime_t>()));
// register_memory
CHECK(lci::register_memory(D<void*>(), D<size_t>()));
RETURNS(lci::mr_t, lci::register_memory(D<void*>(), D<size_t>()));
CHECK(lci::register_memory_x(D<void*>(), D<size_t>())());
CHECK(D<lci::register_memory_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::register_memory_x&>().device(D<lci::device_t>()));
// deregister_memory
CHECK(lci::deregister_memory(D<lci::mr_t*>()));
CHECK(lci::deregister_memory_x(D<lci::mr_t*>())());
CHECK(D<lci::deregister_memory_x&>().runtime(D<lci::runtime_t>()));
// get_rmr
CHECK(lci::get_rmr(D<lci::mr_t>()));
RETURNS(lci::rmr_t, lci::get_rmr(D<lci::mr_t>()));
CHECK(lci::get_rmr_x(D<lci::mr_t>())());
// alloc_endpoint
CHECK(lci::alloc_endpoint());
RETURNS(lci::endpoint_t, lci::alloc_endpoint());
CHECK(lci::alloc_endpoint_x()());
CHECK(D<lci::alloc_endpoint_x&>().runtime(D<lci::runtime_t>()));
CHECK(D<lci::alloc_endpoint_x&>().device(D<lci::device_t>()));
// free_endpoint
CHECK(lci::free_endpoint(D<lci::endpoint_t*>()));
CHECK(lci::free_endpoint_x(D<lci::endpoint_t*>())());
CHECK(D<lci::free_endpoint_x&>().runtime(D<lci::runtime_t>()));
// net_poll_cq
// net_post_recv
// net_post_sends
// net_post_send
// net_post_puts
// net_post_put
// net_post_putImms
// net_post_putImm
// net_post_get
// runtime_t
CHECK(D<lci::runtime_t&>().is_empty());
CHECK(D<lci::runtime_t&>().get_impl());
RETURNS(lci::attr_rdv_protocol_t,
        D<const lci::runtime_t&>().get_attr_rdv_protocol());
CHECK(D<lci::runtime_attr_t&>().rdv_protocol);
RETURNS(uint64_t, D<const lci::runtime_t&>().get_attr_max_tag());
CHECK(D<lci::runtime_attr_t&>().max_tag);
RETURNS(bool, D<const lci::runtime_t&>().get_attr_alloc_default_device());
CHECK(D<lci::runtime_attr_t&>().alloc_default_device);
RETURNS(bool, D<const lci::runtime_t&>().get_attr_alloc_default_packet_pool());
CHECK(D<lci::runtime_attr_t&>().alloc_default_packet_pool);
// packet_pool_t
CHECK(D<lci::packet_pool_t&>().is_empty());
CHECK(D<lci::packet_pool_t&>().get_impl());
RETURNS(size_t, D<const lci::packet_pool_t&>().get_attr_packet_size());
CHECK(D<lci::packet_pool_attr_t&>().packet_size);
RETURNS(size_t, D<const lci::packet_pool_t&>().get_attr_npackets());
CHECK(D<lci::packet_pool_attr_t&>().npackets);
// matching_engine_t
CHECK(D<lci::matching_engine_t&>().is_empty());
CHECK(D<lci::matching_engine_t&>().get_impl());
// comp_t
CHECK(D<lci::comp_t&>().is_empty());
CHECK(D<lci::comp_t&>().get_impl());
// net_context_t
CHECK(D<lci::net_context_t&>().is_empty());
CHECK(D<lci::net_context_t&>().get_impl());
RETURNS(std::string,
        D<const lci::net_context_t&>().get_attr_ofi_provider_name());
RETURNS(size_t, D<const lci::net_context_t&>().get_attr_max_msg_size());
RETURNS(size_t, D<const lci::net_context_t&>().get_attr_max_inject_size());
RETURNS(bool, D<const lci::net_context_t&>().get_attr_support_putimm());
RETURNS(int, D<const lci::net_context_t&>().get_attr_ibv_gid_idx());
RETURNS(bool,
        D<const lci::net_context_t&>().get_attr_ibv_force_gid_auto_select());
RETURNS(lci::attr_ibv_odp_strategy_t,
        D<const lci::net_context_t&>().get_attr_ibv_odp_strategy());
RETURNS(lci::attr_ibv_prefetch_strategy_t,
        D<const lci::net_context_t&>().get_attr_ibv_prefetch_strategy());
// net_context_attr_t
RETURNS(std::string, D<lci::net_context_attr_t&>().ofi_provider_name);
RETURNS(size_t, D<lci::net_context_attr_t&>().max_msg_size);
RETURNS(size_t, D<lci::net_context_attr_t&>().max_inject_size);
RETURNS(bool, D<lci::net_context_attr_t&>().support_putimm);
RETURNS(int, D<lci::net_context_attr_t&>().ibv_gid_idx);
RETURNS(bool, D<lci::net_context_attr_t&>().ibv_force_gid_auto_select);
RETURNS(lci::attr_ibv_odp_strategy_t,
        D<lci::net_context_attr_t&>().ibv_odp_strategy);
RETURNS(lci::attr_ibv_prefetch_strategy_t,
        D<lci::net_context_attr_t&>().ibv_prefetch_strategy);
// device_t
CHECK(D<lci::device_t&>().is_empty());
CHECK(D<lci::device_t&>().get_impl());
RETURNS(size_t, D<const lci::device_t&>().get_attr_net_max_sends());
CHECK(D<lci::device_attr_t&>().net_max_sends);
RETURNS(size_t, D<const lci::device_t&>().get_attr_net_max_recvs());
CHECK(D<lci::device_attr_t&>().net_max_recvs);
RETURNS(size_t, D<const lci::device_t&>().get_attr_net_max_cqes());
CHECK(D<lci::device_attr_t&>().net_max_cqes);
// mr_t
CHECK(D<lci::mr_t&>().is_empty());
CHECK(D<lci::mr_t&>().get_impl());
// endpoint_t
CHECK(D<lci::endpoint_t&>().is_empty());
CHECK(D<lci::endpoint_t&>().get_impl());
RETURNS(int, D<const lci::endpoint_t&>().get_attr_uid());

namespace
{

// Names of upstream's API reference that this library does not provide,
// by reason (docs/ARCHITECTURE.md, "Compatibility with upstream LCI 2").
struct not_provided_t {
  const char* names;
  const char* reason;
};
[[maybe_unused]] const not_provided_t kNotProvided[] = {
    {"alloc_net_context_x::use_dmabuf attr_backend_t::ibv "
     "attr_backend_t::ucx global_attr_t::use_dmabuf "
     "net_context_attr_t::use_dmabuf net_context_t::get_attr_use_dmabuf",
     "UCX and GPU memory settings of upstream's net context: this library "
     "has no UCX or accelerator backend"},
    {"alloc_net_context_x::backend alloc_net_context_x::device_name "
     "attr_backend_t::none attr_backend_t::ofi net_context_attr_t::backend "
     "net_context_attr_t::device_name net_context_t::get_attr_backend "
     "net_context_t::get_attr_device_name",
     "a net context is a handle on the runtime's one network context "
     "(docs/ARCHITECTURE.md): the backend is chosen with the runtime "
     "(alloc_runtime_x().backend(name), a string: ofi, shm, hybrid, auto; "
     "get_attr_backend gives that string), not per net context or with "
     "upstream's attr_backend_t, and there is no device name setting; the "
     "other settings of a net context are the runtime's (alloc_net_context_x"
     " accepts the values in force)"},
    {"LCI_NET_LOCK_ALL LCI_NET_LOCK_MR LCI_NET_TRYLOCK_MAX "
     "LCI_NET_TRYLOCK_POLL LCI_NET_TRYLOCK_RECV LCI_NET_TRYLOCK_SEND "
     "alloc_device_x::ofi_lock_mode attr_net_lock_mode_t "
     "device_attr_t::ofi_lock_mode device_t::get_attr_ofi_lock_mode "
     "global_attr_t::ofi_lock_mode",
     "upstream's lock modes of its libfabric endpoints (a bitmask of "
     "LCI_NET_TRYLOCK_* per operation): a device here has one try-lock over "
     "its send queue, receive queue and completion queue together "
     "(docs/ARCHITECTURE.md, \"The layers and the path of a message\"), so no "
     "mode can be given; a program that wants fewer lock conflicts "
     "allocates a device per thread"},
    {"alloc_device_x::shm_consumer_cas_attempts alloc_device_x::shm_enable "
     "alloc_device_x::shm_max_polls "
     "alloc_device_x::shm_producer_cas_attempts "
     "alloc_device_x::shm_ring_size alloc_device_x::shm_slot_size "
     "device_attr_t::shm_consumer_cas_attempts device_attr_t::shm_enable "
     "device_attr_t::shm_max_polls "
     "device_attr_t::shm_producer_cas_attempts "
     "device_attr_t::shm_ring_size device_attr_t::shm_slot_size "
     "device_t::get_attr_shm_consumer_cas_attempts "
     "device_t::get_attr_shm_enable device_t::get_attr_shm_max_polls "
     "device_t::get_attr_shm_producer_cas_attempts "
     "device_t::get_attr_shm_ring_size device_t::get_attr_shm_slot_size "
     "global_attr_t::shm_consumer_cas_attempts global_attr_t::shm_enable "
     "global_attr_t::shm_max_polls "
     "global_attr_t::shm_producer_cas_attempts "
     "global_attr_t::shm_slot_size",
     "settings of upstream's own shared-memory transport, one per device "
     "(on, ring and slot sizes, polling and CAS retry counts): the native "
     "shm backend here is the runtime's (attribute backend), with its "
     "own ring size for the whole runtime (shm_ring_size); a per-device "
     "switch or geometry cannot be given"},
    {"attr_comp_type_t::counter attr_comp_type_t::cq "
     "attr_comp_type_t::custom attr_comp_type_t::graph "
     "attr_comp_type_t::handler attr_comp_type_t::sync "
     "comp_attr_t::comp_type comp_attr_t::cq_default_length "
     "comp_attr_t::cq_type comp_attr_t::sync_threshold "
     "comp_attr_t::zero_copy_am comp_t::get_attr_comp_type "
     "comp_t::get_attr_cq_default_length comp_t::get_attr_cq_type "
     "comp_t::get_attr_sync_threshold comp_t::get_attr_zero_copy_am "
     "global_attr_t::cq_default_length global_attr_t::sync_threshold "
     "global_attr_t::zero_copy_am",
     "the completion objects' type and settings in comp_attr_t and the "
     "global defaults of upstream's names for them: comp_attr_t here holds "
     "name and user_context (a user's class derived from comp_impl_t sets "
     "it); the settings are the allocating calls' (alloc_cq_x().cq_type, "
     ".default_length, alloc_sync_x().threshold, .zero_copy_am) and "
     "global_attr_t names them cq_type, default_length, threshold"},
    {"allreduce_x::ring_nsteps broadcast_x::ring_nsteps "
     "reduce_scatter_x::ring_nsteps",
     "the step count of upstream's ring algorithms of these collectives: "
     "the ring algorithms here (docs/COLLECTIVES.md, chosen with "
     ".algorithm()) have no such parameter"},
    {"alloc_runtime_x::device_name g_runtime_init_x::device_name "
     "global_attr_t::device_name",
     "upstream's name of the network device to open: the device is "
     "chosen here by the backend (libfabric's provider, the first "
     "ibv device with an active port; docs/LAUNCHING.md), not by name"},
    {"g_default_attr rmr_t::mr_base",
     "upstream implementation details and globals: rmr_t::mr_base (this "
     "rmr_t holds base, key, size, runtime and rank), the g_default_attr "
     "variable (get_g_default_attr and set_g_default_attr instead)"},
};

}  // namespace
