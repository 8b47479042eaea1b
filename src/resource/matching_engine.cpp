#include "resource/matching_engine.hpp"

#include "util/error.hpp"

namespace lci
{

matching_engine_impl_t::matching_engine_impl_t(const matching_engine_attr_t& a)
    : attr(a)
{
  if (attr.num_buckets == 0 || (attr.num_buckets & (attr.num_buckets - 1)))
    util::throw_fatal("alloc_matching_engine: num_buckets ", attr.num_buckets,
                      " must be a power of two");
  buckets_.reset(new bucket_t[attr.num_buckets]);
  mask_ = attr.num_buckets - 1;
}

void* matching_engine_impl_t::insert(const match_key_t& key, void* value,
                                     type_t type)
{
  uint64_t h = key.tag * 0x9E3779B97F4A7C15ull ^
               (static_cast<uint64_t>(static_cast<uint32_t>(key.rank)) << 32 |
                key.policy);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  bucket_t& b = buckets_[h & mask_];
  util::spin_guard_t g(b.lock);
  for (size_t i = 0; i < b.queues.size(); ++i) {
    queue_t& q = b.queues[i];
    if (!(q.key == key)) continue;
    if (q.type == type) {
      q.values.push_back(value);
      return nullptr;
    }
    void* matched = q.values.front();
    q.values.pop_front();
    if (q.values.empty()) {
      b.queues[i] = std::move(b.queues.back());
      b.queues.pop_back();
    }
    return matched;
  }
  b.queues.push_back(queue_t{key, type, {value}});
  return nullptr;
}

}  // namespace lci

#include "core/globals.hpp"
#include "core/recv.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"

namespace lci
{

matching_engine_t alloc_matching_engine_x::call_impl(
    runtime_t runtime, const matching_engine_attr_t& attr)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "alloc_matching_engine");
  auto* me = new matching_engine_impl_t(attr);
  me->runtime = rt;
  me->index = static_cast<uint32_t>(rt->matching_engines.push_back(me));
  globals::matching_engines().add(me);
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

matching_engine_t get_default_matching_engine_x::call_impl(runtime_t runtime)
{
  return matching_engine_t(
      resolve_runtime(runtime, "get_default_matching_engine")->default_me);
}

}  // namespace lci
