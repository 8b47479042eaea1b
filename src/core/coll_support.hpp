// What the collectives (src/coll) take from the core besides the public
// API: this header is the whole of it. The collectives build their
// point-to-point algorithms from public posts, graphs and progress calls;
// what a user could not do is listed here, so that no collective reads a
// runtime, device or matching-engine field.
//
//   begin_call  resolves and checks a collective's runtime, device and
//               matching engine once per call, and hands out what the
//               public API does not: the runtime's collective engine (the
//               default), the collective's sequence number on its engine,
//               and the node-local team that serves that engine.
//   first_failed_rank
//               a failed rank of the runtime, if any: every rank takes part
//               in every collective, so a collective that learns of one
//               posts nothing more.
//   coll_tag    the tag layout of collective messages, which the core's
//               peer-failure sweep also reads (a collective whose peer
//               failed must fail on every rank, including ranks that were
//               waiting for a live rank that depended on the failed one).
//
// And the other way, the hook through which the core reaches the
// collective layer without including it: team_base_t, the part of the
// node-local team (coll/shm_team.hpp) that progress advances, and
// open_node_team, declared here and defined by the collective layer
// (coll/shm_team.cpp), which alloc_runtime calls to open the team.
#ifndef LCI_CORE_COLL_SUPPORT_HPP
#define LCI_CORE_COLL_SUPPORT_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lci.hpp"

namespace lci::bootstrap
{
class backend_t;
}

namespace lci::coll
{

// The node-local team as the core sees it: whether collectives are queued
// (one relaxed load, on every progress call) and a poll that advances
// them.
class team_base_t
{
 public:
  virtual ~team_base_t() = default;
  bool pending() const { return npending_.load(std::memory_order_relaxed); }
  // Runs the queued collectives as far as they go without waiting; true
  // when none is left. One thread at a time (others return false at once).
  virtual bool poll() = 0;

 protected:
  std::atomic<size_t> npending_{0};
};

// Opens the node-local team of a runtime (defined by the collective layer,
// coll/shm_team.cpp). Every rank calls it at runtime allocation, in the
// same place (it runs bootstrap allgathers); null on every rank unless all
// of them opened it. `nodes`: every rank's node id (net/node.hpp; the same
// vector everywhere); `failed(ctx, rank)`: whether a rank is known failed.
std::unique_ptr<team_base_t> open_node_team(
    bootstrap::backend_t& boot, int rank_me, int rank_n,
    const std::vector<std::string>& nodes, bool (*failed)(void*, int),
    void* ctx);

// A collective call's resources, resolved once.
struct call_t {
  runtime_t runtime;
  device_t device;
  matching_engine_t engine;
  int rank = 0;
  int nranks = 1;
  // the node-local team (coll/shm_team.hpp) when `engine` is the runtime's
  // collective engine and the runtime has one, else null (collectives of
  // other engines may run concurrently with the team's)
  team_base_t* team = nullptr;
  // this collective's number among those started on `engine` (wraps at
  // 2^kSeqBits)
  uint64_t seq = 0;
};

// Throws fatal_error naming `call` when there is no runtime or device
// (the runtime has no default device and none was passed), or when the
// engine is not live or belongs to another runtime. An empty `engine`
// means the runtime's collective engine.
call_t begin_call(const char* call, runtime_t runtime, device_t device,
                  matching_engine_t engine);

// The lowest rank of `runtime` known failed (docs/RELIABILITY.md, "Peer
// failure"), or -1 (one load when none is).
int first_failed_rank(runtime_t runtime);

// A collective message's tag: seq << 24 | kind << 20 | step. `seq` keeps
// successive collectives of one engine apart, `kind` (1..7, the shm_kind_t
// of coll/shm_team.hpp) collectives that ranks call out of order, `step`
// the messages between two ranks within one collective.
constexpr int kStepBits = 20;
constexpr int kKindBits = 4;
constexpr int kSeqBits = 64 - kStepBits - kKindBits;
constexpr uint64_t kStepMask = (uint64_t(1) << kStepBits) - 1;
constexpr uint64_t kKindMask = (uint64_t(1) << kKindBits) - 1;

constexpr tag_t coll_tag(uint64_t seq, uint64_t kind, uint64_t step)
{
  return (seq << (kStepBits + kKindBits)) | (kind << kStepBits) | step;
}
constexpr uint64_t tag_kind(tag_t tag)
{
  return (tag >> kStepBits) & kKindMask;
}
constexpr uint64_t tag_step(tag_t tag) { return tag & kStepMask; }

}  // namespace lci::coll

#endif  // LCI_CORE_COLL_SUPPORT_HPP
