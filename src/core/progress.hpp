// The progress engine (paper 4.4, steps 4-8) and the blocking helpers built
// on it. Thread safety: any-thread; several threads may progress one device.
#ifndef LCI_CORE_PROGRESS_HPP
#define LCI_CORE_PROGRESS_HPP

#include "lci.hpp"
#include "resource/device.hpp"

namespace lci
{

class sync_impl_t;

// Poll the device once and react to what completed; keep the receives
// pre-posted. done if anything happened, retry otherwise.
error_t progress_device(device_impl_t* device);

// Progress `device` until every send packet it has in flight is back.
void drain_device(device_impl_t* device);

// Progress `device` until `sync` is ready; copies its statuses to p_out.
void wait_sync(sync_impl_t* sync, device_impl_t* device, status_t* p_out);

}  // namespace lci

#endif  // LCI_CORE_PROGRESS_HPP
