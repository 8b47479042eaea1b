// alloc_matching_engine and free_matching_engine. They are core code, not
// resource code: a new engine takes over the sends that arrived for it
// before it existed (progress.cpp adopt_early_sends), and a freed one
// deletes the receives still waiting in it (core/recv.hpp).
#include "core/progress.hpp"
#include "core/recv.hpp"
#include "resource/globals.hpp"
#include "resource/matching_engine.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

matching_engine_t alloc_matching_engine_x::call_impl(
    runtime_t runtime, matching_engine_make_key_t make_key,
    const matching_engine_attr_t& attr)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "alloc_matching_engine");
  detail::check_matching_engine_enums(attr, "alloc_matching_engine");
  auto* me = new matching_engine_impl_t(attr);
  me->make_key_fn = make_key;
  me->runtime = rt;
  me->index = static_cast<uint32_t>(rt->matching_engines.push_back(me));
  globals::matching_engines().add(me);
  adopt_early_sends(rt, me);
  return matching_engine_t(me);
}

void free_matching_engine_x::call_impl(matching_engine_t* matching_engine,
                                       runtime_t)
{
  const char* call = "free_matching_engine";
  if (!matching_engine)
    util::throw_fatal(call, ": null matching engine pointer");
  matching_engine_impl_t* me = util::checked(matching_engine->p_impl, call);
  globals::matching_engines().remove(me, call, "matching engine");
  runtime_impl_t* rt = me->runtime;
  if (rt->matching_engines.get(me->index, nullptr) == me)
    rt->matching_engines.put(me->index, nullptr);
  if (rt->default_me == me) rt->default_me = nullptr;
  if (rt->coll_me == me) rt->coll_me = nullptr;
  // unexpected messages give their packets back; pending receives vanish
  me->clear([](void* v, matching_engine_impl_t::type_t type) {
    if (type == matching_engine_impl_t::type_t::send)
      packet_pool_impl_t::put(static_cast<packet_t*>(v));
    else
      delete static_cast<recv_t*>(v);
  });
  delete me;
  matching_engine->p_impl = nullptr;
}

}  // namespace lci
