// Remote completions (register_rcomp, reserve_rcomps, deregister_rcomp):
// the runtime's table of completion objects that peers name by index. The
// index travels in the message header's aux field, so its limit is the
// wire protocol's (msg_header_t::kAuxMax).
#include "core/protocol.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

rcomp_t register_rcomp_x::call_impl(comp_t comp, runtime_t runtime,
                                    rcomp_t rcomp)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "register_rcomp");
  if (comp.is_empty() || comp == COMP_NULL_RETRY)
    util::throw_fatal("register_rcomp: the completion object is empty");
  if (rcomp != RCOMP_NULL) {
    // a handle of reserve_rcomps (or one deregistered); put() would grow
    // the table to any index, so one never handed out is refused here
    if (rcomp >= rt->rcomps.size())
      util::throw_fatal("register_rcomp: remote completion ", rcomp,
                        " was not reserved (reserve_rcomps)");
    if (rt->rcomps.get(rcomp, nullptr) != nullptr)
      util::throw_fatal("register_rcomp: remote completion ", rcomp,
                        " is registered already");
    rt->rcomps.put(rcomp, comp.p_impl);
    return rcomp;
  }
  size_t idx = rt->rcomps.push_back(comp.p_impl);
  if (idx > msg_header_t::kAuxMax)
    util::throw_fatal("register_rcomp: more than ", msg_header_t::kAuxMax,
                      " remote completions registered");
  return static_cast<rcomp_t>(idx);
}

rcomp_t reserve_rcomps_x::call_impl(rcomp_t n, runtime_t runtime)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "reserve_rcomps");
  if (n == 0 || n == RCOMP_NULL)
    util::throw_fatal("reserve_rcomps: bad count ", n);
  // the check before the reservation: a refused call reserves nothing
  if (rt->rcomps.size() + n - 1 > msg_header_t::kAuxMax)
    util::throw_fatal("reserve_rcomps: ", n,
                      " handles would pass the largest remote completion, ",
                      msg_header_t::kAuxMax);
  return static_cast<rcomp_t>(rt->rcomps.reserve(n));
}

void deregister_rcomp_x::call_impl(rcomp_t rcomp, runtime_t runtime)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "deregister_rcomp");
  if (rt->rcomps.get(rcomp, nullptr) == nullptr)
    util::throw_fatal("deregister_rcomp: remote completion ", rcomp,
                      " is not registered");
  rt->rcomps.put(rcomp, nullptr);
}

}  // namespace lci
