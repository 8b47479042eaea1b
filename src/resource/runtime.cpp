#include "resource/runtime.hpp"

#include <cstdlib>

namespace lci
{

runtime_impl_t::runtime_impl_t(const runtime_attr_t& a) : attr(a) {}

runtime_impl_t::~runtime_impl_t() = default;

int get_rank_me_x::call_impl(runtime_t runtime)
{
  return resolve_runtime(runtime, "get_rank_me")->rank_me;
}

int get_rank_n_x::call_impl(runtime_t runtime)
{
  return resolve_runtime(runtime, "get_rank_n")->rank_n;
}

allocator_default_t g_allocator_default;

allocator_base_t* default_allocator() { return &g_allocator_default; }

void set_allocator_x::call_impl(allocator_base_t* allocator, runtime_t runtime)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "set_allocator");
  // the default object is kept as null: the eager path calls malloc itself
  if (allocator == default_allocator()) allocator = nullptr;
  rt->allocator.store(allocator, std::memory_order_release);
}

allocator_base_t* get_allocator_x::call_impl(runtime_t runtime)
{
  return am_allocator(resolve_runtime(runtime, "get_allocator"));
}

}  // namespace lci
