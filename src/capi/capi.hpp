// The C interface (include/lci.h) on top of the C++ one: conversions between
// the C and C++ forms of every type the generated lci_c_binding.cpp passes,
// the exception barrier, and the operations whose C form is written by hand
// (gen_c.CUSTOM). Internal to the library.
//
// The C and C++ types are twins of the same layout (checked in capi.cpp),
// so a conversion is a copy of the same bytes, or a pointer cast where the
// C++ call takes an array (sync_test's statuses) or a callback of the user.
#ifndef LCI_CAPI_CAPI_HPP
#define LCI_CAPI_CAPI_HPP

#include "lci.h"
#include "lci.hpp"
#include "lci_c_handles.hpp"  // the resource handles (generated)

namespace lci::capi
{

// C -> C++ ------------------------------------------------------------------
// types spelled the same in both (integers, void*, reduce_op_t, ...)
template <typename T>
inline T cxx(T v)
{
  return v;
}
inline comp_t cxx(lci_comp_t h)
{
  return comp_t(reinterpret_cast<comp_impl_t*>(h));
}
inline mr_t cxx(lci_mr_t h) { return mr_t(reinterpret_cast<mr_impl_t*>(h)); }
inline net_context_t cxx(lci_net_context_t h)
{
  return net_context_t(reinterpret_cast<net_context_impl_t*>(h));
}
inline endpoint_t cxx(lci_endpoint_t h)
{
  return endpoint_t(reinterpret_cast<endpoint_impl_t*>(h));
}
inline rmr_t cxx(const lci_rmr_t& r)
{
  rmr_t x;
  x.base = r.base;
  x.opaque_rkey = r.opaque_rkey;
  x.size = r.size;
  x.runtime = r.runtime;
  x.rank = r.rank;
  return x;
}
// A C array of buffers as the C++ list (a count of 0: empty).
inline void check_list(const void* p, size_t n)
{
  if (!p && n)
    throw fatal_error("post_comm: a NULL buffer list with count " +
                      std::to_string(n));
}
// The C array itself, seen as the C++ list (the elements are twins of
// the same layout, capi.cpp): like a C++ list, it must outlive the call.
inline buffers_view_t cxx_list(const lci_buffer_t* p, size_t n)
{
  check_list(p, n);
  return buffers_view_t(reinterpret_cast<const buffer_t*>(p), p ? n : 0);
}
inline rbuffers_view_t cxx_list(const lci_rbuffer_t* p, size_t n)
{
  check_list(p, n);
  return rbuffers_view_t(reinterpret_cast<const rbuffer_t*>(p), p ? n : 0);
}
inline errorcode_t cxx(lci_error_t e) { return static_cast<errorcode_t>(e); }
inline status_t cxx(const lci_status_t& s)
{
  status_t x(cxx(s.error));
  x.rank = s.rank;
  x.buffer = s.buffer;
  x.size = s.size;
  x.tag = s.tag;
  x.user_context = s.user_context;
  return x;
}
// an array of statuses the C++ call fills (same layout)
inline status_t* cxx(lci_status_t* p) { return reinterpret_cast<status_t*>(p); }
inline direction_t cxx(lci_direction_t e)
{
  return static_cast<direction_t>(e);
}
inline comp_semantic_t cxx(lci_comp_semantic_t e)
{
  return static_cast<comp_semantic_t>(e);
}
inline matching_policy_t cxx(lci_matching_policy_t e)
{
  return static_cast<matching_policy_t>(e);
}
inline matching_entry_type_t cxx(lci_matching_entry_type_t e)
{
  return static_cast<matching_entry_type_t>(e);
}
inline broadcast_algorithm_t cxx(lci_broadcast_algorithm_t e)
{
  return static_cast<broadcast_algorithm_t>(e);
}
inline allreduce_algorithm_t cxx(lci_allreduce_algorithm_t e)
{
  return static_cast<allreduce_algorithm_t>(e);
}
inline reduce_scatter_algorithm_t cxx(lci_reduce_scatter_algorithm_t e)
{
  return static_cast<reduce_scatter_algorithm_t>(e);
}
inline allgather_algorithm_t cxx(lci_allgather_algorithm_t e)
{
  return static_cast<allgather_algorithm_t>(e);
}
// Callbacks whose signatures differ only in a twin type (an lci_status_t
// for a status_t, a C enum for its enum class) are called through the C++
// type: the twins have the same layout and are passed the same way (the
// cast goes through void (*)(), the generic function pointer type).
template <typename To, typename From>
inline To fn_cast(From f)
{
  return reinterpret_cast<To>(reinterpret_cast<void (*)()>(f));
}
inline graph_node_run_cb_t cxx(lci_graph_node_run_cb_t f)
{
  return fn_cast<graph_node_run_cb_t>(f);
}
inline graph_edge_run_cb_t cxx(lci_graph_edge_run_cb_t f)
{
  return fn_cast<graph_edge_run_cb_t>(f);
}
inline matching_engine_make_key_t cxx(lci_matching_engine_make_key_t f)
{
  return fn_cast<matching_engine_make_key_t>(f);
}

// C++ -> C ------------------------------------------------------------------
template <typename T>
inline T c(T v)
{
  return v;
}
inline lci_comp_t c(comp_t h) { return reinterpret_cast<lci_comp_t>(h.p_impl); }
inline lci_mr_t c(mr_t h) { return reinterpret_cast<lci_mr_t>(h.p_impl); }
inline lci_net_context_t c(net_context_t h)
{
  return reinterpret_cast<lci_net_context_t>(h.p_impl);
}
inline lci_endpoint_t c(endpoint_t h)
{
  return reinterpret_cast<lci_endpoint_t>(h.p_impl);
}
inline lci_rmr_t c(const rmr_t& r)
{
  lci_rmr_t x;
  x.base = r.base;
  x.opaque_rkey = r.opaque_rkey;
  x.size = r.size;
  x.runtime = r.runtime;
  x.rank = r.rank;
  return x;
}
inline lci_error_t c(errorcode_t e) { return static_cast<lci_error_t>(e); }
inline lci_status_t c(const status_t& s)
{
  lci_status_t x;
  x.error = c(s.error.errorcode);
  x.rank = s.rank;
  x.buffer = s.buffer;
  x.size = s.size;
  x.tag = s.tag;
  x.user_context = s.user_context;
  return x;
}

// Where a call returning a status constructs it: in the caller's `*out`
// (same layout as status_t, capi.cpp), so that the C++ call writes the
// status once, in place; in `spare` when the caller discards it.
struct status_space_t {
  alignas(status_t) unsigned char bytes[sizeof(status_t)];
};
inline void* status_slot(lci_status_t* out, status_space_t* spare)
{
  return out ? static_cast<void*>(out) : static_cast<void*>(spare->bytes);
}

// The exception barrier: called in a catch block, it turns the exception in
// flight into an error code and this thread's last-error message, which
// starts with `fn`, the C function (the C++ message names the C++ call,
// which may be another: lci_post_send fails in post_comm).
lci_error_t fail(const char* fn) noexcept;
// The same for an operation returning a status: `*out` (when not null)
// becomes a status with the error code and no peer.
inline lci_error_t fail_status(const char* fn, lci_status_t* out) noexcept
{
  const lci_error_t e = fail(fn);
  if (out) *out = c(status_t(cxx(e)));
  return e;
}

// Operations written by hand (gen_c.CUSTOM); they may throw.
lci_error_t alloc_handler(lci_comp_handler_t handler, void* handler_context,
                          const lci_alloc_handler_args_t* args,
                          lci_comp_t* out);
lci_error_t set_allocator(const lci_allocator_t* allocator,
                          const lci_set_allocator_args_t* args);
lci_error_t get_allocator(const lci_get_allocator_args_t* args,
                          const lci_allocator_t** out);

}  // namespace lci::capi

#endif  // LCI_CAPI_CAPI_HPP
