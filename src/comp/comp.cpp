// The completion-object operations.
#include <mutex>
#include <typeinfo>
#include <unordered_set>

#include "comp/counter.hpp"
#include "comp/cq.hpp"
#include "comp/graph.hpp"
#include "comp/handler.hpp"
#include "comp/sync.hpp"
#include "comp/zero_copy.hpp"
#include "resource/globals.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{
namespace
{

// The comp allocations take a runtime only to check it: a completion
// object belongs to no runtime.
void check_runtime(runtime_t runtime, const char* call)
{
  if (runtime.p_impl) resolve_runtime(runtime, call);
}

comp_t track(comp_impl_t* comp)
{
  globals::comps().add(comp);
  return comp_t(comp);
}

// the name and user context that comp_t::get_attr reports
comp_impl_t* named(comp_impl_t* comp, const char* name, void* user_context)
{
  comp->attr.name = detail::resource_name(name);
  comp->attr.user_context = user_context;
  return comp;
}

[[noreturn]] [[gnu::cold]] void throw_not_a(comp_t comp, const char* call,
                                            const char* what)
{
  if (comp.is_empty() || comp == COMP_NULL_RETRY)
    util::throw_fatal(call, ": the completion object is empty");
  util::throw_fatal(call, ": completion object ",
                    static_cast<void*>(comp.p_impl), " is not a ", what);
}

// The built-in object of type T behind `comp`, or a clear error. The
// built-in classes are final and allocated by this library, so on the fast
// path an exact match of the type_info object (a vtable load and a pointer
// compare) replaces a dynamic_cast; anything else takes the dynamic_cast.
template <typename T>
[[gnu::noinline]] T* as_slow(comp_t comp, const char* call, const char* what)
{
  comp_impl_t* p = comp.p_impl;
  if (__builtin_expect(comp.is_empty() || comp == COMP_NULL_RETRY, 0))
    throw_not_a(comp, call, what);
  // a built-in object is in the live set (a lock-free lookup); a freed or
  // foreign pointer must not be dereferenced
  globals::comps().check(p, call, "completion object");
  if (__builtin_expect(&typeid(*p) == &typeid(T), 1)) return static_cast<T*>(p);
  T* q = dynamic_cast<T*>(p);
  if (!q) throw_not_a(comp, call, what);
  return q;
}

// The same, inline for a built-in object this thread checked last (the
// live set's per-thread cache; nothing freed since): no call.
template <typename T>
inline T* as(comp_t comp, const char* call, const char* what)
{
  comp_impl_t* p = comp.p_impl;
  util::live_set_t* comps = globals::comps_if_made();
  if (__builtin_expect(comps != nullptr && p != nullptr &&
                           comp != COMP_NULL_RETRY && comps->cached(p) &&
                           &typeid(*p) == &typeid(T),
                       1))
    return static_cast<T*>(p);
  return as_slow<T>(comp, call, what);
}

[[gnu::noinline]] cq_impl_t* as_cq_slow(comp_t comp, const char* call)
{
  comp_impl_t* p = comp.p_impl;
  if (__builtin_expect(comp.is_empty() || comp == COMP_NULL_RETRY, 0))
    throw_not_a(comp, call, "completion queue");
  globals::comps().check(p, call, "completion object");
  const std::type_info* t = &typeid(*p);
  if (t == &typeid(lcrq_cq_t)) return static_cast<lcrq_cq_t*>(p);
  if (t == &typeid(array_cq_t)) return static_cast<array_cq_t*>(p);
  cq_impl_t* q = dynamic_cast<cq_impl_t*>(p);
  if (!q) throw_not_a(comp, call, "completion queue");
  return q;
}

// The completion object behind `comp` when the live set's cache knows it
// (the fast path of every queue call), else null: as_cq_slow then checks
// it in full and says what is wrong.
inline comp_impl_t* cached_comp(comp_t comp)
{
  comp_impl_t* p = comp.p_impl;
  util::live_set_t* comps = globals::comps_if_made();
  return __builtin_expect(comps != nullptr && p != nullptr &&
                              comp != COMP_NULL_RETRY && comps->cached(p),
                          1)
             ? p
             : nullptr;
}

inline cq_impl_t* as_cq(comp_t comp, const char* call)
{
  if (comp_impl_t* p = cached_comp(comp)) {
    const std::type_info* t = &typeid(*p);
    if (t == &typeid(lcrq_cq_t)) return static_cast<lcrq_cq_t*>(p);
    if (t == &typeid(array_cq_t)) return static_cast<array_cq_t*>(p);
  }
  return as_cq_slow(comp, call);
}

}  // namespace

sync_impl_t::sync_impl_t(const sync_attr_t& a) : attr(a), one_(a.threshold == 1)
{
  if (attr.threshold < 1)
    util::throw_fatal("alloc_sync: threshold ", attr.threshold,
                      " must be at least 1");
  if (!one_) statuses_.reset(new status_t[attr.threshold]);
}

// zero_copy_am: the set of such objects (comp/zero_copy.hpp)
namespace comp
{
std::atomic<int> g_nzero_copy{0};
namespace
{
std::mutex g_zero_mu;
std::unordered_set<const comp_impl_t*>& zero_set()
{
  static auto* s = new std::unordered_set<const comp_impl_t*>;
  return *s;
}
}  // namespace
void add_zero_copy(const comp_impl_t* c)
{
  std::lock_guard<std::mutex> g(g_zero_mu);
  if (zero_set().insert(c).second)
    g_nzero_copy.fetch_add(1, std::memory_order_relaxed);
}
void forget_zero_copy(const comp_impl_t* c)
{
  if (g_nzero_copy.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> g(g_zero_mu);
  if (zero_set().erase(c) != 0)
    g_nzero_copy.fetch_sub(1, std::memory_order_relaxed);
}
bool is_zero_copy_slow(const comp_impl_t* c)
{
  std::lock_guard<std::mutex> g(g_zero_mu);
  return zero_set().count(c) != 0;
}
}  // namespace comp

namespace
{
comp_t zero_copy_if(comp_t c, bool zero_copy_am)
{
  if (zero_copy_am) comp::add_zero_copy(c.p_impl);
  return c;
}
}  // namespace

comp_t alloc_sync_x::call_impl(runtime_t runtime, bool zero_copy_am,
                               const sync_attr_t& attr)
{
  check_runtime(runtime, "alloc_sync");
  return zero_copy_if(
      track(named(new sync_impl_t(attr), attr.name, attr.user_context)),
      zero_copy_am);
}

bool sync_test_x::call_impl(comp_t comp, status_t* p_out, runtime_t runtime)
{
  check_runtime(runtime, "sync_test");
  return as<sync_impl_t>(comp, "sync_test", "synchronizer")->test(p_out);
}

sync_impl_t* checked_sync(comp_t comp, const char* call)
{
  return as<sync_impl_t>(comp, call, "synchronizer");
}

comp_t alloc_cq_x::call_impl(runtime_t runtime, bool zero_copy_am,
                             const cq_attr_t& attr)
{
  check_runtime(runtime, "alloc_cq");
  return zero_copy_if(track(named(make_cq(attr), attr.name, attr.user_context)),
                      zero_copy_am);
}

status_t cq_pop_x::call_impl(comp_t comp, runtime_t runtime)
{
  check_runtime(runtime, "cq_pop");
  // as_cq's fast path, each class's pop called from the type test that
  // found it (cq_impl_t::pop would test the kind again)
  if (comp_impl_t* p = cached_comp(comp)) {
    const std::type_info* t = &typeid(*p);
    if (__builtin_expect(t == &typeid(lcrq_cq_t), 1))
      return static_cast<lcrq_cq_t*>(p)->pop_impl();
    if (t == &typeid(array_cq_t))
      return static_cast<array_cq_t*>(p)->pop_impl();
  }
  return as_cq_slow(comp, "cq_pop")->pop();
}

comp_t alloc_handler_x::call_impl(comp_handler_t handler, runtime_t runtime,
                                  bool zero_copy_am, const char* name,
                                  void* user_context)
{
  check_runtime(runtime, "alloc_handler");
  if (!handler) util::throw_fatal("alloc_handler: null handler function");
  return zero_copy_if(
      track(named(new handler_impl_t(handler), name, user_context)),
      zero_copy_am);
}

comp_t alloc_counter_x::call_impl(runtime_t runtime, const char* name,
                                  void* user_context)
{
  check_runtime(runtime, "alloc_counter");
  return track(named(new counter_impl_t(), name, user_context));
}

int64_t counter_get_x::call_impl(comp_t comp, runtime_t runtime)
{
  check_runtime(runtime, "counter_get");
  return as<counter_impl_t>(comp, "counter_get", "counter")->get();
}

void counter_set_x::call_impl(comp_t comp, int64_t value, runtime_t runtime)
{
  check_runtime(runtime, "counter_set");
  as<counter_impl_t>(comp, "counter_set", "counter")->set(value);
}

void comp_signal_x::call_impl(comp_t comp, status_t status, runtime_t runtime)
{
  check_runtime(runtime, "comp_signal");
  if (comp.is_empty() || comp == COMP_NULL_RETRY)
    util::throw_fatal("comp_signal: the completion object is empty");
  comp.p_impl->signal(status);
}

// ---------------------------------------------------------------------------
// graphs

comp_t alloc_graph_x::call_impl(comp_t comp, runtime_t runtime,
                                const char* name, void* user_context)
{
  check_runtime(runtime, "alloc_graph");
  if (comp == COMP_NULL_RETRY)
    util::throw_fatal(
        "alloc_graph: COMP_NULL_RETRY cannot be signalled when the graph "
        "completes (pass no completion object, or a real one)");
  return track(named(new graph_impl_t(comp), name, user_context));
}

graph_node_t graph_add_node_x::call_impl(comp_t graph, graph_node_run_cb_t fn,
                                         void* value,
                                         graph_node_free_cb_t free_cb,
                                         runtime_t runtime)
{
  check_runtime(runtime, "graph_add_node");
  return as<graph_impl_t>(graph, "graph_add_node", "graph")
      ->add_node(fn, value, free_cb);
}

void graph_add_edge_x::call_impl(comp_t graph, graph_node_t src,
                                 graph_node_t dst, graph_edge_run_cb_t fn,
                                 runtime_t runtime)
{
  check_runtime(runtime, "graph_add_edge");
  as<graph_impl_t>(graph, "graph_add_edge", "graph")->add_edge(src, dst, fn);
}

void graph_node_mark_complete_x::call_impl(graph_node_t node, status_t status,
                                           runtime_t runtime)
{
  const char* call = "graph_node_mark_complete";
  check_runtime(runtime, call);
  graph_node_impl_t* n = graph_impl_t::node_of(node, call);
  if (!n->graph) util::throw_fatal(call, ": ", node, " is not a graph node");
  n->graph->complete(n, status, call);
}

void graph_start_x::call_impl(comp_t graph, runtime_t runtime)
{
  check_runtime(runtime, "graph_start");
  as<graph_impl_t>(graph, "graph_start", "graph")->start();
}

status_t graph_test_x::call_impl(comp_t graph, runtime_t runtime)
{
  check_runtime(runtime, "graph_test");
  return as<graph_impl_t>(graph, "graph_test", "graph")->test();
}

void free_comp_x::call_impl(comp_t* comp, runtime_t runtime)
{
  const char* call = "free_comp";
  check_runtime(runtime, call);
  if (!comp) util::throw_fatal(call, ": null completion object pointer");
  comp_impl_t* p = util::checked(comp->p_impl, call);
  if (*comp == COMP_NULL_RETRY)
    util::throw_fatal(call, ": COMP_NULL_RETRY cannot be freed");
  globals::comps().remove(p, call, "completion object");
  comp::forget_zero_copy(p);
  delete p;
  comp->p_impl = nullptr;
}

comp_attr_t comp_t::get_attr() const
{
  if (is_empty() || *this == COMP_NULL_RETRY)
    util::throw_fatal("comp_t::get_attr: the completion object is empty");
  return p_impl->attr;
}

const char* comp_t::get_attr_name() const { return get_attr().name; }

void* comp_t::get_attr_user_context() const { return get_attr().user_context; }

}  // namespace lci
