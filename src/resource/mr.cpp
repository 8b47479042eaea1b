#include "resource/mr.hpp"

#include "resource/globals.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

namespace
{
mr_impl_t* live_mr(mr_t mr, const char* call)
{
  mr_impl_t* p = util::checked(mr.p_impl, call);
  globals::mrs().check(p, call, "mr");
  return p;
}
}  // namespace

void mr_registry_t::add(mr_impl_t* mr)
{
  std::lock_guard<std::mutex> g(mu_);
  by_key_[mr->net.rkey] = mr;
}

size_t mr_registry_t::count()
{
  std::lock_guard<std::mutex> g(mu_);
  return by_key_.size();
}

void mr_registry_t::remove(mr_impl_t* mr)
{
  std::lock_guard<std::mutex> g(mu_);
  auto it = by_key_.find(mr->net.rkey);
  if (it != by_key_.end() && it->second == mr) by_key_.erase(it);
}

mr_impl_t* mr_registry_t::find(uint64_t rkey)
{
  std::lock_guard<std::mutex> g(mu_);
  auto it = by_key_.find(rkey);
  return it == by_key_.end() ? nullptr : it->second;
}

void mr_registry_t::release_all()
{
  std::unordered_map<uint64_t, mr_impl_t*> all;
  {
    std::lock_guard<std::mutex> g(mu_);
    all.swap(by_key_);
  }
  for (auto& kv : all) {
    mr_impl_t* mr = kv.second;
    globals::mrs().remove(mr, "free_runtime", "mr");
    mr->runtime->net_context->deregister_memory(&mr->net);
    delete mr;
  }
}

void mr_use_t::acquire(runtime_impl_t* rt, mr_t user, void* buf, size_t size,
                       bool remote, const char* call)
{
  rt_ = rt;
  if (!user.is_empty()) {
    mr_impl_t* mr = user.p_impl;
    globals::mrs().check(mr, call, "mr");
    if (mr->runtime != rt)
      util::throw_fatal(call, ": the mr ", static_cast<void*>(mr),
                        " belongs to another runtime");
    if (!mr->covers(buf, size))
      util::throw_fatal(call, ": the buffer [", buf, ", +", size,
                        ") is not inside the mr [",
                        static_cast<void*>(mr->address), ", +", mr->size, ")");
    desc_ = mr->net.desc;
    remote_.base = mr->net.rma_base;
    remote_.disp = static_cast<uint64_t>(static_cast<char*>(buf) - mr->address);
    remote_.rkey = mr->net.rkey;
    return;
  }
  const net::caps_t& caps = rt->net_context->caps();
  if (!remote && !caps.mr_local && !rt->attr.register_local) return;
  owned_ = rt->net_context->register_memory(buf, size, call);
  has_owned_ = true;
  desc_ = owned_.desc;
  remote_.base = owned_.rma_base;
  remote_.disp = 0;
  remote_.rkey = owned_.rkey;
}

void mr_use_t::release()
{
  if (has_owned_) {
    rt_->net_context->deregister_memory(&owned_);
    has_owned_ = false;
  }
}

void check_rmr(runtime_impl_t* rt, const char* call, int rank, const rmr_t& rmr,
               uint64_t disp, size_t size)
{
  if (rmr.runtime != rt->tag)
    util::throw_fatal(call, ": the rmr (runtime value ", rmr.runtime, ", rank ",
                      rmr.rank,
                      ") was not made by get_rmr of a rank of this runtime "
                      "(runtime value ",
                      rt->tag, ")");
  if (rmr.rank != rank)
    util::throw_fatal(call, ": the rmr is a region of rank ", rmr.rank,
                      ", not of the target rank ", rank);
  if (disp > rmr.size || size > rmr.size - disp)
    util::throw_fatal(call, ": remote_disp ", disp, " + size ", size,
                      " is outside the ", rmr.size, "-byte remote region");
  if (rank == rt->rank_me) {
    // our own region: the registry knows whether it is still registered
    mr_impl_t* mr = rt->mrs.find(rmr.opaque_rkey);
    if (!mr || mr->net.rma_base != rmr.base || mr->size != rmr.size)
      util::throw_fatal(call, ": the rmr (key ", rmr.opaque_rkey,
                        ") names no registered region of this process "
                        "(deregistered?)");
  }
}

mr_t register_memory_x::call_impl(void* address, size_t size, runtime_t runtime,
                                  device_t device)
{
  const char* call = "register_memory";
  // one network context per runtime: a registration serves every device,
  // so a device (upstream LCI registers per device) only selects and
  // checks the runtime
  runtime_impl_t* rt = device.is_empty()
                           ? resolve_runtime(runtime, call)
                           : resolve_device(runtime, device, call).rt;
  // Zero bytes are a valid registration (programs register buffers of
  // every size from 0, as upstream LCI allows): a handle whose rmr admits
  // puts and gets of 0 bytes. Its address may then be null (an empty
  // std::vector's data()).
  if (!address && size != 0) util::throw_fatal(call, ": null address");
  if (size > static_cast<size_t>(PTRDIFF_MAX) ||
      reinterpret_cast<uintptr_t>(address) > UINTPTR_MAX - size)
    util::throw_fatal(call, ": size ", size, " at ", address,
                      " is larger than any buffer");
  if (!rt->net_context->caps().rma)
    util::throw_fatal(call, ": the network backend (",
                      rt->net_context->caps().provider, ") has no RMA support");
  auto* mr = new mr_impl_t;
  mr->runtime = rt;
  mr->address = static_cast<char*>(address);
  mr->size = size;
  try {
    mr->net = rt->net_context->register_memory(address, size, call);
  } catch (...) {
    delete mr;
    throw;
  }
  rt->mrs.add(mr);
  globals::mrs().add(mr);
  return mr_t(mr);
}

void deregister_memory_x::call_impl(mr_t* mr, runtime_t)
{
  const char* call = "deregister_memory";
  if (!mr) util::throw_fatal(call, ": null mr pointer");
  mr_impl_t* p = util::checked(mr->p_impl, call);
  globals::mrs().remove(p, call, "mr");
  p->runtime->mrs.remove(p);
  p->runtime->net_context->deregister_memory(&p->net);
  delete p;
  mr->p_impl = nullptr;
}

rmr_t get_rmr_x::call_impl(mr_t mr, runtime_t runtime)
{
  const char* call = "get_rmr";
  mr_impl_t* p = live_mr(mr, call);
  if (runtime.p_impl && resolve_runtime(runtime, call) != p->runtime)
    util::throw_fatal(call, ": mr ", static_cast<void*>(p),
                      " is a registration of another runtime");
  rmr_t r;
  r.base = p->net.rma_base;
  r.opaque_rkey = p->net.rkey;
  r.size = p->size;
  r.runtime = p->runtime->tag;
  r.rank = p->runtime->rank_me;
  return r;
}

mr_attr_t mr_t::get_attr() const
{
  live_mr(*this, "mr_t::get_attr");
  return mr_attr_t{DEFAULT_NAME, nullptr};
}

const char* mr_t::get_attr_name() const
{
  live_mr(*this, "mr_t::get_attr_name");
  return DEFAULT_NAME;
}

void* mr_t::get_attr_user_context() const
{
  live_mr(*this, "mr_t::get_attr_user_context");
  return nullptr;
}

}  // namespace lci
