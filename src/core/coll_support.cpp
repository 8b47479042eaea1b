// The core's side of core/coll_support.hpp.
#include "core/coll_support.hpp"

#include "core/peer_failure.hpp"
#include "resource/globals.hpp"
#include "resource/matching_engine.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci::coll
{

call_t begin_call(const char* call, runtime_t runtime, device_t device,
                  matching_engine_t engine)
{
  rt_dev_t rd;
  if (device.is_empty()) {
    // the global runtime without a call when none was given (the common
    // collective): resolve_runtime checks a given handle and reports none
    runtime_impl_t* g =
        runtime.is_empty() ? globals::g_runtime().p_impl : nullptr;
    rd.rt = g ? g : resolve_runtime(runtime, call);
    rd.dev = rd.rt->default_device;
    if (!rd.dev)
      util::throw_fatal(call,
                        ": no device (the runtime has no default device: pass "
                        ".device())");
  } else {
    rd = resolve_device(runtime, device, call);
  }
  runtime_impl_t* rt = rd.rt;
  checked_engine(engine, nullptr, call);
  matching_engine_impl_t* m = engine.p_impl ? engine.p_impl : rt->coll_me;
  if (!m) util::throw_fatal(call, ": the runtime has no collective engine");
  if (m->runtime != rt)
    util::throw_fatal(call, ": the matching engine belongs to another runtime");
  call_t c;
  c.runtime = runtime_t(rt);
  c.device = device_t(rd.dev);
  c.engine = matching_engine_t(m);
  c.rank = rt->rank_me;
  c.nranks = rt->rank_n;
  if (m == rt->coll_me) c.team = rt->coll_team.get();
  // A load and a store, not a locked add: the collectives of one engine
  // are started by one thread at a time (the ordering rule), and a locked
  // instruction would wait here for this rank's last published line of
  // the node-local team to leave its store buffer.
  const uint64_t seq = m->coll_seq.load(std::memory_order_relaxed);
  m->coll_seq.store(seq + 1, std::memory_order_relaxed);
  c.seq = seq & ((uint64_t(1) << kSeqBits) - 1);
  return c;
}

int first_failed_rank(runtime_t runtime)
{
  runtime_impl_t* rt = runtime.p_impl;
  if (rt->nfailed.load(std::memory_order_acquire) == 0) return -1;
  for (int r = 0; r < rt->rank_n; ++r)
    if (peer_is_failed(rt, r)) return r;
  return -1;
}

}  // namespace lci::coll
