// Peer failure: detecting that a rank died, failing what waits for it, and
// reporting it (docs/RELIABILITY.md, "Peer failure").
//
// Detection, independent of the network backend:
//   - liveness of same-host peers: at alloc_runtime every rank tells the
//     others its pid, its process start time and its host (host name + pid
//     namespace). Progress checks, at most every peer_check_interval ms of
//     coarse-clock time (when it found nothing to do, or every 64 calls),
//     that each same-host peer's /proc/<pid>/stat still exists, is not a
//     zombie and has the same start time (so a reused pid is not mistaken
//     for the peer);
//   - silence of peers on other hosts (peer_timeout): the same check
//     counts epochs (one per check) and declares a peer on another host
//     failed when no message from it arrived for peer_timeout ms; every
//     peer_timeout / 5 ms it sends each such peer a heartbeat (a header
//     alone) over the device whose progress call runs the check, so a
//     live peer that calls progress is never silent that long. Any
//     message counts: the receive path notes the epoch of its sender
//     (note_heard: a load and a compare, a store once per epoch);
//   - network errors: a send or transfer to a rank that the backend fails
//     with an error completion (tcp: the connection was reset) declares
//     that rank failed (net::net_device_t names the peer when it can).
//
// Declaring rank R failed (mark_peer_failed, once per rank and runtime):
//   - posts naming R (send, receive from R, put, get) throw
//     peer_failure_error;
//   - receives posted with source R are withdrawn from every matching engine
//     and signalled with errorcode_t::fatal_peer_failure; ANY_SOURCE ones
//     stay posted;
//   - rendezvous transfers with R and puts/gets to R are signalled the same
//     way (their objects are kept until the runtime is freed, since the
//     network may still complete fragments of them);
//   - messages from R still arriving are dropped;
//   - the next progress call on any device of the runtime throws
//     peer_failure_error naming R, once per failed rank, if this rank had
//     something outstanding with R that failed (or the runtime attribute
//     peer_failure_everywhere is set); else the rank goes on, and
//     is_peer_failed(R) says it;
//   - free_device skips its barrier and drains for at most 1 s.
//
// Fast-path cost: one relaxed load of nfailed in posts and receive
// delivery; one thread-local increment (and when idle a coarse clock read)
// in progress.
#ifndef LCI_CORE_PEER_FAILURE_HPP
#define LCI_CORE_PEER_FAILURE_HPP

#include <string>
#include <vector>

#include "resource/runtime.hpp"

namespace lci
{

// alloc_runtime: sets rt->peers from the allgathered process descriptions
// (`all` holds rank_n of them, as made by describe_self) and arms the check.
struct process_desc_t {
  int64_t pid;
  uint64_t start_time;
  uint64_t pidns;  // inode of /proc/self/ns/pid
  char host[64];
};
process_desc_t describe_self();
void init_peer_tracking(runtime_impl_t* rt, const process_desc_t* all);

// peer_state[r]: 0 alive; failed: not to be reported by progress (quiet),
// to be reported by the next progress call, or reported.
constexpr uint8_t kPeerFailedQuiet = 1;
constexpr uint8_t kPeerFailedUnreported = 2;
constexpr uint8_t kPeerFailedReported = 3;

// Rank r is known to have failed.
inline bool peer_is_failed(const runtime_impl_t* rt, int r)
{
  return rt->nfailed.load(std::memory_order_relaxed) > 0 && r >= 0 &&
         r < rt->rank_n &&
         rt->peer_state[r].load(std::memory_order_acquire) != 0;
}

// Checks the same-host peers now (any thread).
void check_peers_now(runtime_impl_t* rt);
// The check when its interval has passed (coarse clock): the same-host
// processes, then one epoch of the watch of the peers on other hosts
// (heartbeats over `dev`, if not null).
void maybe_check_peers(runtime_impl_t* rt, device_impl_t* dev);

// The receive path: a message from rank `r` arrived (any type).
inline void note_heard(runtime_impl_t* rt, int r)
{
  if (!rt->watch_remote) return;
  const uint32_t e = rt->watch_epoch.load(std::memory_order_relaxed);
  if (rt->heard[r].load(std::memory_order_relaxed) != e)
    rt->heard[r].store(e, std::memory_order_relaxed);
}

// A network operation with peer `rank` (-1: not known) completed with
// error `why`: true when that is a peer failure, which is then declared.
// A same-host peer counts as failed only if its process is gone (looked at
// for up to 100 ms: a killed process closes its sockets before it becomes
// a zombie); a peer on another host is declared failed (unreachable); an
// unknown rank counts when some peer has failed. Error paths only.
bool network_error_is_peer_failure(runtime_impl_t* rt, int rank,
                                   const char* why);

// Throws peer_failure_error for a failed rank not reported yet (if any).
void report_peer_failure(runtime_impl_t* rt);

// Progress's periodic upkeep (progress_device: every 8th call in a row
// that found nothing to do and at each idle yield, every 64th call that
// found work; a spinning thread polls far more often than the clock's
// interval of 100 ms advances): the check when its interval has passed,
// then the report of a failure not reported yet.
inline void peer_failure_poll(runtime_impl_t* rt, device_impl_t* dev)
{
  if (rt->peer_check_ns != 0) maybe_check_peers(rt, dev);
  if (rt->nunreported.load(std::memory_order_relaxed) != 0)
    report_peer_failure(rt);
}

// Declares `rank` failed (idempotent; any thread, not under a device lock)
// and fails what waits for it. `why` says how it was detected.
void mark_peer_failed(runtime_impl_t* rt, int rank, const std::string& why);

// Failed rank `rank` had something outstanding here that failed after it
// was declared (a post waiting in the backlog, a send the network failed):
// the next progress call reports it, if it has not yet.
void note_peer_failure_felt(runtime_impl_t* rt, int rank);

// A post named failed rank `rank`: throws peer_failure_error naming `call`.
[[noreturn]] void throw_peer_failed(runtime_impl_t* rt, int rank,
                                    const char* call);

// The status a failed operation is signalled with.
status_t peer_failure_status(int rank, void* buffer, tag_t tag,
                             void* user_context);

// Implemented next to the operations: take every rendezvous context / RMA
// operation with peer `rank` out of its table, signal its completion object
// with fatal_peer_failure, append it to `dead` (kept until free_runtime).
// Return how many completion objects they signalled.
size_t fail_rdv_peer(runtime_impl_t* rt, int rank,
                     std::vector<transfer_op_t*>* dead);
size_t fail_rma_peer(runtime_impl_t* rt, int rank,
                     std::vector<transfer_op_t*>* dead);

// free_runtime, after the devices are gone: deletes the failed operations.
void release_failed_ops(runtime_impl_t* rt);

}  // namespace lci

#endif  // LCI_CORE_PEER_FAILURE_HPP
