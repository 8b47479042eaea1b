// Posts that return only when their communication is complete (COMP_NULL,
// allow_posted(false), and COMP_NULL_RETRY above the eager limit): post,
// then progress the device until the completion comes.
#include <atomic>

#include "core/post_internal.hpp"
#include "core/progress.hpp"

namespace lci
{

namespace
{

// The completion of a blocking receive. It lives on the heap so that a wait
// interrupted by an exception can leave: if the receive was matched already,
// its signal may still come (from any thread); whichever of signal() and
// abandon() comes second frees the object.
class blocking_comp_t final : public comp_impl_t
{
 public:
  void signal(status_t s) override
  {
    status_ = s;
    if (state_.exchange(kSignalled, std::memory_order_acq_rel) == kAbandoned)
      delete this;
  }
  bool test(status_t* out)
  {
    if (state_.load(std::memory_order_acquire) != kSignalled) return false;
    *out = status_;
    return true;
  }
  void abandon()
  {
    if (state_.exchange(kAbandoned, std::memory_order_acq_rel) == kSignalled)
      delete this;
  }

 private:
  enum : int { kWaiting, kSignalled, kAbandoned };
  std::atomic<int> state_{kWaiting};
  status_t status_;
};

}  // namespace

status_t post_in_blocking(const post_args_t& a)
{
  auto* comp = new blocking_comp_t;
  recv_t* recv = nullptr;
  status_t s;
  try {
    s = post_in(a, comp, &recv);
  } catch (...) {
    delete comp;
    throw;
  }
  if (!s.is_posted()) {
    delete comp;
    return s;
  }
  try {
    // progress yields the core when idle (util/idle.hpp)
    while (!comp->test(&s)) progress_device(a.dev);
  } catch (...) {
    auto key = a.me->key(a.rank, a.tag, a.policy);
    if (a.me->remove(key, recv, matching_engine_impl_t::type_t::recv)) {
      delete recv;
      delete comp;
    } else {
      comp->abandon();  // matched meanwhile: its completion is underway
    }
    throw;
  }
  delete comp;
  return s;
}

status_t post_blocking(post_args_t a, post_path_t path, direction_t dir,
                       bool may_return_retry)
{
  const bool signals =
      path != post_path_t::eager || a.semantic == comp_semantic_t::network;
  blocking_comp_t* comp = signals ? new blocking_comp_t : nullptr;
  a.comp = comp;
  status_t s;
  bool posted = false;
  try {
    for (;;) {
      s = post_once(a, path, dir, comp);
      if (!s.is_retry()) break;
      if (may_return_retry) {
        delete comp;
        return s;
      }
      progress_device(a.dev);
    }
    if (s.is_done()) {
      delete comp;
      return s;
    }
    posted = true;
    while (!comp->test(&s)) progress_device(a.dev);
  } catch (...) {
    if (posted)
      comp->abandon();
    else
      delete comp;
    throw;
  }
  delete comp;
  return s;
}

}  // namespace lci
