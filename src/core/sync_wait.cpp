// sync_wait: the one completion-object call that drives progress. It is
// core code, not completion-object code: completion objects sit below the
// core (the core signals them), so a wait that polls a device is built
// here, on progress.hpp wait_sync.
#include "comp/sync.hpp"
#include "core/progress.hpp"
#include "resource/runtime.hpp"

namespace lci
{

void sync_wait_x::call_impl(comp_t comp, status_t* p_out, bool do_progress,
                            device_t device, runtime_t runtime)
{
  sync_impl_t* sync = checked_sync(comp, "sync_wait");
  device_impl_t* dev = nullptr;
  if (do_progress) dev = resolve_device(runtime, device, "sync_wait").dev;
  wait_sync(sync, dev, p_out);
}

}  // namespace lci
