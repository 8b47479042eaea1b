// Internal counters of a runtime's resources, for tests that check nothing
// leaked (tests/multi/mp_soak.cpp). Not public API: tests that include it
// add src/ to their include path. Exact only when no thread uses the
// resources meanwhile.
#ifndef LCI_CORE_INTROSPECT_HPP
#define LCI_CORE_INTROSPECT_HPP

#include <cstddef>
#include <cstdint>
#include <string>

#include "lci.hpp"

namespace lci::introspect
{

struct counts_t {
  size_t pool_npackets = 0;       // packets of the pool
  size_t pool_free = 0;           // packets free in the pool now
  int64_t recvs_posted = 0;       // receives pre-posted on the device
  int64_t sends_pending = 0;      // sends of the device in flight
  int64_t ops_pending = 0;        // puts, gets, rendezvous of the device
  size_t backlog = 0;             // entries of the device's backlog queue
  size_t me_entries = 0;          // sends and receives waiting in the engine
  size_t user_mrs = 0;            // register_memory regions of the runtime
  int64_t net_registrations = 0;  // backend registrations (user + on the fly)
  size_t rdv_ctxs = 0;            // rendezvous contexts of the runtime
  // packets progress took back from unexpected messages while the device's
  // pool was dry (release_held_packets), since the device was allocated
  uint64_t held_released = 0;
  // bytes of split rendezvous (core/rendezvous.hpp) the runtime read as
  // receiver (the tails) and wrote as sender (the heads)
  uint64_t rdv_split_read = 0;
  uint64_t rdv_split_written = 0;
  // bytes of get rendezvous the runtime read as receiver
  uint64_t rdv_get_read = 0;
};

// Empty handles select the runtime's (or the global runtime's) defaults.
counts_t get_counts(runtime_t runtime = runtime_t(),
                    device_t device = device_t(),
                    packet_pool_t pool = packet_pool_t(),
                    matching_engine_t engine = matching_engine_t());

// Hands `len` bytes to the device's receive path as if the network had
// delivered them into one of its pre-posted packets (the real
// deliver_message: checks, then matching, signalling or a control
// message's handling). For the wire fuzzer (tests/fuzz/fuzz_packet.cpp).
// False (nothing done) when the device's pool has no packet free or `len`
// exceeds a packet; throws fatal_error like progress would.
// With `in_place`, the message is handed over as a backend's in-place
// `message` completion would (deliver_in_place: no packet unless it must
// wait unmatched).
bool deliver_raw(const void* data, size_t len, runtime_t runtime = runtime_t(),
                 device_t device = device_t(), bool in_place = false);

// The network backend's own summary of the device's queues (diagnostics,
// e.g. the native shm backend's rings, doorbell bits and parked messages);
// empty when the backend offers none.
std::string net_state(runtime_t runtime = runtime_t(),
                      device_t device = device_t());

}  // namespace lci::introspect

#endif  // LCI_CORE_INTROSPECT_HPP
