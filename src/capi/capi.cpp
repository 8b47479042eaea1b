// The hand-written part of the C interface: the checks that the C twins of
// the C++ types have the same values and layout, the last-error message,
// handler completion objects with a context, and the allocator hook.
#include "capi/capi.hpp"

#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>

#include "resource/globals.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci::capi
{
namespace
{

// Error codes and enums: the C constant equals the C++ enumerator.
#define LCI_CAPI_SAME(c_value, cxx_value)                                 \
  static_assert(static_cast<int>(c_value) == static_cast<int>(cxx_value), \
                #c_value)
LCI_CAPI_SAME(LCI_DONE_MIN, errorcode_t::done_min);
LCI_CAPI_SAME(LCI_DONE, errorcode_t::done);
LCI_CAPI_SAME(LCI_DONE_BACKLOG, errorcode_t::done_backlog);
LCI_CAPI_SAME(LCI_DONE_MAX, errorcode_t::done_max);
LCI_CAPI_SAME(LCI_POSTED_MIN, errorcode_t::posted_min);
LCI_CAPI_SAME(LCI_POSTED, errorcode_t::posted);
LCI_CAPI_SAME(LCI_POSTED_BACKLOG, errorcode_t::posted_backlog);
LCI_CAPI_SAME(LCI_POSTED_MAX, errorcode_t::posted_max);
LCI_CAPI_SAME(LCI_RETRY_MIN, errorcode_t::retry_min);
LCI_CAPI_SAME(LCI_RETRY, errorcode_t::retry);
LCI_CAPI_SAME(LCI_RETRY_INIT, errorcode_t::retry_init);
LCI_CAPI_SAME(LCI_RETRY_LOCK, errorcode_t::retry_lock);
LCI_CAPI_SAME(LCI_RETRY_NOPACKET, errorcode_t::retry_nopacket);
LCI_CAPI_SAME(LCI_RETRY_NOMEM, errorcode_t::retry_nomem);
LCI_CAPI_SAME(LCI_RETRY_BACKLOG, errorcode_t::retry_backlog);
LCI_CAPI_SAME(LCI_RETRY_MAX, errorcode_t::retry_max);
LCI_CAPI_SAME(LCI_FATAL, errorcode_t::fatal);
LCI_CAPI_SAME(LCI_FATAL_PEER_FAILURE, errorcode_t::fatal_peer_failure);
LCI_CAPI_SAME(LCI_DIRECTION_OUT, direction_t::OUT);
LCI_CAPI_SAME(LCI_DIRECTION_IN, direction_t::IN);
LCI_CAPI_SAME(LCI_COMP_SEMANTIC_MEMORY, comp_semantic_t::memory);
LCI_CAPI_SAME(LCI_COMP_SEMANTIC_BUFFER, comp_semantic_t::buffer);
LCI_CAPI_SAME(LCI_COMP_SEMANTIC_NETWORK, comp_semantic_t::network);
LCI_CAPI_SAME(LCI_MATCHING_POLICY_NONE, matching_policy_t::none);
LCI_CAPI_SAME(LCI_MATCHING_POLICY_RANK_ONLY, matching_policy_t::rank_only);
LCI_CAPI_SAME(LCI_MATCHING_POLICY_TAG_ONLY, matching_policy_t::tag_only);
LCI_CAPI_SAME(LCI_MATCHING_POLICY_RANK_TAG, matching_policy_t::rank_tag);
LCI_CAPI_SAME(LCI_MATCHING_ENTRY_TYPE_SEND, matching_entry_type_t::send);
LCI_CAPI_SAME(LCI_MATCHING_ENTRY_TYPE_RECV, matching_entry_type_t::recv);
LCI_CAPI_SAME(LCI_BROADCAST_ALGORITHM_NONE, broadcast_algorithm_t::none);
LCI_CAPI_SAME(LCI_BROADCAST_ALGORITHM_DIRECT, broadcast_algorithm_t::direct);
LCI_CAPI_SAME(LCI_BROADCAST_ALGORITHM_TREE, broadcast_algorithm_t::tree);
LCI_CAPI_SAME(LCI_BROADCAST_ALGORITHM_RING, broadcast_algorithm_t::ring);
LCI_CAPI_SAME(LCI_ALLREDUCE_ALGORITHM_NONE, allreduce_algorithm_t::none);
LCI_CAPI_SAME(LCI_ALLREDUCE_ALGORITHM_DIRECT, allreduce_algorithm_t::direct);
LCI_CAPI_SAME(LCI_ALLREDUCE_ALGORITHM_TREE, allreduce_algorithm_t::tree);
LCI_CAPI_SAME(LCI_ALLREDUCE_ALGORITHM_RING, allreduce_algorithm_t::ring);
LCI_CAPI_SAME(LCI_ALLREDUCE_ALGORITHM_RECURSIVE_DOUBLING,
              allreduce_algorithm_t::recursive_doubling);
LCI_CAPI_SAME(LCI_REDUCE_SCATTER_ALGORITHM_NONE,
              reduce_scatter_algorithm_t::none);
LCI_CAPI_SAME(LCI_REDUCE_SCATTER_ALGORITHM_DIRECT,
              reduce_scatter_algorithm_t::direct);
LCI_CAPI_SAME(LCI_REDUCE_SCATTER_ALGORITHM_TREE,
              reduce_scatter_algorithm_t::tree);
LCI_CAPI_SAME(LCI_REDUCE_SCATTER_ALGORITHM_RING,
              reduce_scatter_algorithm_t::ring);
LCI_CAPI_SAME(LCI_ALLGATHER_ALGORITHM_NONE, allgather_algorithm_t::none);
LCI_CAPI_SAME(LCI_ALLGATHER_ALGORITHM_DIRECT, allgather_algorithm_t::direct);
LCI_CAPI_SAME(LCI_ALLGATHER_ALGORITHM_RING, allgather_algorithm_t::ring);
static_assert(LCI_ANY_SOURCE == ANY_SOURCE);
static_assert(LCI_ANY_TAG == ANY_TAG);
static_assert(LCI_RCOMP_NULL == RCOMP_NULL);
static_assert(sizeof(lci_tag_t) == sizeof(tag_t));
static_assert(sizeof(lci_rcomp_t) == sizeof(rcomp_t));
#undef LCI_CAPI_SAME

// Twins passed by pointer or through a callback must have the same layout.
#define LCI_CAPI_FIELD(c_type, cxx_type, c_field, cxx_field)                \
  static_assert(offsetof(c_type, c_field) == offsetof(cxx_type, cxx_field), \
                #c_type "." #c_field)
static_assert(sizeof(lci_status_t) == sizeof(status_t));
static_assert(alignof(lci_status_t) == alignof(status_t));
static_assert(std::is_standard_layout_v<status_t> &&
              std::is_trivially_copyable_v<status_t>);
static_assert(sizeof(lci_error_t) == sizeof(error_t));
LCI_CAPI_FIELD(lci_status_t, status_t, error, error);
LCI_CAPI_FIELD(lci_status_t, status_t, rank, rank);
LCI_CAPI_FIELD(lci_status_t, status_t, buffer, buffer);
LCI_CAPI_FIELD(lci_status_t, status_t, size, size);
LCI_CAPI_FIELD(lci_status_t, status_t, tag, tag);
LCI_CAPI_FIELD(lci_status_t, status_t, user_context, user_context);
static_assert(sizeof(lci_rmr_t) == sizeof(rmr_t));
LCI_CAPI_FIELD(lci_rmr_t, rmr_t, base, base);
LCI_CAPI_FIELD(lci_rmr_t, rmr_t, opaque_rkey, opaque_rkey);
LCI_CAPI_FIELD(lci_rmr_t, rmr_t, size, size);
LCI_CAPI_FIELD(lci_rmr_t, rmr_t, runtime, runtime);
LCI_CAPI_FIELD(lci_rmr_t, rmr_t, rank, rank);
static_assert(sizeof(lci_matching_policy_t) == sizeof(matching_policy_t));
// a C array of buffers is the C++ list itself (capi::cxx_list)
static_assert(sizeof(lci_buffer_t) == sizeof(buffer_t));
static_assert(alignof(lci_buffer_t) == alignof(buffer_t));
static_assert(sizeof(lci_mr_t) == sizeof(mr_t));
LCI_CAPI_FIELD(lci_buffer_t, buffer_t, base, base);
LCI_CAPI_FIELD(lci_buffer_t, buffer_t, size, size);
LCI_CAPI_FIELD(lci_buffer_t, buffer_t, mr, mr);
static_assert(sizeof(lci_rbuffer_t) == sizeof(rbuffer_t));
static_assert(alignof(lci_rbuffer_t) == alignof(rbuffer_t));
LCI_CAPI_FIELD(lci_rbuffer_t, rbuffer_t, disp, disp);
LCI_CAPI_FIELD(lci_rbuffer_t, rbuffer_t, rmr, rmr);
#undef LCI_CAPI_FIELD

thread_local std::string t_last_error;

void set_last_error(const char* fn, const char* what) noexcept
{
  try {
    t_last_error = fn;
    t_last_error += ": ";
    t_last_error += what;
  } catch (...) {
    // no memory for the message: keep the code, drop the words
    t_last_error.clear();
  }
}

// A handler completion object of the C interface: a function and the
// context it is called with.
class c_handler_impl_t final : public comp_impl_t
{
 public:
  c_handler_impl_t(lci_comp_handler_t fn, void* context)
      : fn_(fn), context_(context)
  {
  }
  void signal(status_t status) override { fn_(c(status), context_); }

 private:
  lci_comp_handler_t fn_;
  void* context_;
};

// The C allocator hook as a C++ allocator. The C struct is read at every
// call, so the caller may not free it while the runtime communicates.
class c_allocator_t final : public allocator_base_t
{
 public:
  explicit c_allocator_t(const lci_allocator_t* a) : a_(a) {}
  void* allocate(size_t size) override
  {
    return a_->allocate(size, a_->context);
  }
  void deallocate(void* ptr) override { a_->deallocate(ptr, a_->context); }
  const lci_allocator_t* c_form() const { return a_; }

 private:
  const lci_allocator_t* a_;
};

void* c_malloc(size_t size, void*) { return std::malloc(size); }
void c_free(void* ptr, void*) { std::free(ptr); }
void* cxx_allocate(size_t size, void* context)
{
  return static_cast<allocator_base_t*>(context)->allocate(size);
}
void cxx_deallocate(void* ptr, void* context)
{
  static_cast<allocator_base_t*>(context)->deallocate(ptr);
}
// the C form of the default allocator (lci::default_allocator())
const lci_allocator_t g_default_c_allocator = {&c_malloc, &c_free, nullptr};

// Adapters live until the process exits: an active-message buffer may be
// freed through one after its runtime moved to another allocator, and an
// adapter is a few words per allocator a program ever sets.
struct allocator_registry_t {
  std::mutex mu;
  std::map<const lci_allocator_t*, std::unique_ptr<c_allocator_t>> of_c;
  // C forms of allocators set through the C++ interface
  std::map<allocator_base_t*, std::unique_ptr<lci_allocator_t>> of_cxx;
};
allocator_registry_t& allocators()
{
  static allocator_registry_t r;
  return r;
}

}  // namespace

lci_error_t fail(const char* fn) noexcept
{
  try {
    throw;
  } catch (const peer_failure_error& e) {
    set_last_error(fn, e.what());
    return LCI_FATAL_PEER_FAILURE;
  } catch (const std::bad_alloc&) {
    set_last_error(fn, "out of memory");
  } catch (const std::exception& e) {
    set_last_error(fn, e.what());
  } catch (...) {
    set_last_error(fn, "an unknown C++ exception");
  }
  return LCI_FATAL;
}

lci_error_t alloc_handler(lci_comp_handler_t handler, void* handler_context,
                          const lci_alloc_handler_args_t* args, lci_comp_t* out)
{
  // the same checks as lci::alloc_handler (a handler belongs to no runtime;
  // the runtime, when given, is checked)
  if (args && args->runtime)
    resolve_runtime(cxx(args->runtime), "alloc_handler");
  if (!handler) util::throw_fatal("alloc_handler: null handler function");
  std::unique_ptr<comp_impl_t> p(
      new c_handler_impl_t(handler, handler_context));
  if (args) {
    p->attr.name = detail::resource_name(args->name);
    p->attr.user_context = args->user_context;
  }
  globals::comps().add(p.get());
  if (out) *out = c(comp_t(p.release()));
  return LCI_DONE;
}

lci_error_t set_allocator(const lci_allocator_t* allocator,
                          const lci_set_allocator_args_t* args)
{
  const runtime_t runtime = args ? cxx(args->runtime) : runtime_t();
  allocator_base_t* a = nullptr;  // the default
  if (allocator && allocator != &g_default_c_allocator) {
    if (!allocator->allocate || !allocator->deallocate)
      util::throw_fatal("set_allocator: the allocator's ",
                        allocator->allocate ? "deallocate" : "allocate",
                        " function is null");
    allocator_registry_t& r = allocators();
    std::lock_guard<std::mutex> lock(r.mu);
    std::unique_ptr<c_allocator_t>& slot = r.of_c[allocator];
    if (!slot) slot.reset(new c_allocator_t(allocator));
    a = slot.get();
  }
  lci::set_allocator_x(a).runtime(runtime)();
  return LCI_DONE;
}

lci_error_t get_allocator(const lci_get_allocator_args_t* args,
                          const lci_allocator_t** out)
{
  const runtime_t runtime = args ? cxx(args->runtime) : runtime_t();
  allocator_base_t* a = lci::get_allocator_x().runtime(runtime)();
  const lci_allocator_t* result;
  if (a == default_allocator()) {
    result = &g_default_c_allocator;
  } else if (auto* ca = dynamic_cast<c_allocator_t*>(a)) {
    result = ca->c_form();
  } else {
    allocator_registry_t& r = allocators();
    std::lock_guard<std::mutex> lock(r.mu);
    std::unique_ptr<lci_allocator_t>& slot = r.of_cxx[a];
    if (!slot)
      slot.reset(new lci_allocator_t{&cxx_allocate, &cxx_deallocate, a});
    result = slot.get();
  }
  if (out) *out = result;
  return LCI_DONE;
}

}  // namespace lci::capi

extern "C" {

const char* lci_get_errorcode_str(lci_error_t code)
{
  return lci::get_errorcode_str(lci::capi::cxx(code));
}

const char* lci_error_string(void) { return lci::capi::t_last_error.c_str(); }

}  // extern "C"
