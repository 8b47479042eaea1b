#include "core/peer_failure.hpp"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/coll_support.hpp"
#include "core/control.hpp"
#include "core/protocol.hpp"
#include "core/recv.hpp"
#include "core/send_comp.hpp"
#include "core/transfer.hpp"
#include "resource/device.hpp"
#include "resource/matching_engine.hpp"

namespace lci
{
namespace
{

int64_t coarse_now_ns()
{
  timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
  clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

enum class liveness_t { alive, gone, zombie, reused, unknown };

// Reads /proc/<pid>/stat: the state (field 3) and the start time (field 22).
liveness_t probe(int64_t pid, uint64_t start_time)
{
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%lld/stat",
                static_cast<long long>(pid));
  FILE* f = std::fopen(path, "re");
  if (!f) return errno == ENOENT ? liveness_t::gone : liveness_t::unknown;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  if (n == 0) return liveness_t::gone;  // it vanished while we read
  buf[n] = '\0';
  // the command name (field 2) may hold spaces and parentheses: the fields
  // after it start after the last ')'
  const char* p = std::strrchr(buf, ')');
  if (!p || p[1] != ' ') return liveness_t::unknown;
  p += 2;
  const char state = *p;
  if (state == 'Z' || state == 'X' || state == 'x') return liveness_t::zombie;
  if (start_time == 0) return liveness_t::alive;
  // skip fields 3..21 (19 separators) to reach field 22
  for (int i = 0; i < 19 && p; ++i) {
    p = std::strchr(p, ' ');
    if (p) ++p;
  }
  if (!p) return liveness_t::unknown;
  unsigned long long t = std::strtoull(p, nullptr, 10);
  return t == start_time ? liveness_t::alive : liveness_t::reused;
}

uint64_t own_start_time()
{
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%lld/stat",
                static_cast<long long>(::getpid()));
  FILE* f = std::fopen(path, "re");
  if (!f) return 0;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  p += 2;
  for (int i = 0; i < 19 && p; ++i) {
    p = std::strchr(p, ' ');
    if (p) ++p;
  }
  return p ? std::strtoull(p, nullptr, 10) : 0;
}

// Withdraws every receive posted with source `rank` from every matching
// engine of the runtime and signals it; on an engine that has run
// collectives, also every receive of a collective, whatever its source:
// every rank takes part in every collective, so one that waits for a live
// rank waits for data that lacks the failed rank's part, which the live
// rank will not send (core/coll_support.hpp).
size_t fail_recvs(runtime_impl_t* rt, int rank)
{
  size_t nfailed = 0;
  const size_t nme = rt->matching_engines.size();
  for (size_t i = 0; i < nme; ++i) {
    matching_engine_impl_t* me = rt->matching_engines.get(i, nullptr);
    if (!me) continue;
    const bool coll = me->coll_seq.load(std::memory_order_relaxed) > 0;
    std::vector<std::pair<match_key_t, recv_t*>> found;
    me->for_each_entry(
        [&](const match_key_t& k, void* v, matching_engine_impl_t::type_t t) {
          if (t != matching_engine_impl_t::type_t::recv) return;
          auto* r = static_cast<recv_t*>(v);
          if (r->rank == rank || (coll && coll::tag_kind(r->tag) != 0))
            found.emplace_back(k, r);
        });
    for (auto& e : found) {
      // false: matched meanwhile, its completion is underway
      if (!me->remove(e.first, e.second, matching_engine_impl_t::type_t::recv))
        continue;
      recv_t* r = e.second;
      status_t s =
          peer_failure_status(rank, r->buffer, r->tag, r->user_context);
      comp_impl_t* c = r->comp;
      delete r;
      c->signal(s);
      ++nfailed;
    }
  }
  return nfailed;
}

// One epoch of the watch of the peers on other hosts (the checking thread
// only): a peer silent for timeout_epochs is failed; every
// heartbeat_epochs each other one gets a heartbeat over `dev`. An epoch
// passes only while this rank calls progress, so a rank that stops
// calling it does not count its peers' silence meanwhile.
void watch_remote_peers(runtime_impl_t* rt, device_impl_t* dev)
{
  const uint32_t e =
      rt->watch_epoch.fetch_add(1, std::memory_order_relaxed) + 1;
  const bool beat = dev && e % rt->heartbeat_epochs == 0;
  for (int r = 0; r < rt->rank_n; ++r) {
    if (!rt->peers[r].remote ||
        rt->peer_state[r].load(std::memory_order_relaxed) != 0)
      continue;
    const uint32_t silent = e - rt->heard[r].load(std::memory_order_relaxed);
    if (silent > rt->timeout_epochs) {
      std::ostringstream why;
      why << "nothing arrived from it (no message, no heartbeat) for "
          << rt->attr.peer_timeout
          << " ms (a peer on another host; runtime attribute peer_timeout)";
      mark_peer_failed(rt, r, why.str());
      continue;
    }
    if (!beat) continue;
    msg_header_t hdr{};
    hdr.rank = rt->rank_me;
    hdr.meta = msg_header_t::make_meta(msg_type_t::heartbeat,
                                       matching_policy_t::none, 0);
    try {
      // best effort: a busy or full queue skips this beat
      try_send_control(dev, nullptr, r, hdr, nullptr, 0);
    } catch (const fatal_error& err) {
      mark_peer_failed(rt, r,
                       std::string("the network refused a heartbeat to it: ") +
                           err.what() + " (a peer on another host)");
    }
  }
}

}  // namespace

process_desc_t describe_self()
{
  process_desc_t d{};
  d.pid = static_cast<int64_t>(::getpid());
  d.start_time = own_start_time();
  struct stat st;
  if (::stat("/proc/self/ns/pid", &st) == 0)
    d.pidns = static_cast<uint64_t>(st.st_ino);
  if (::gethostname(d.host, sizeof(d.host) - 1) != 0) d.host[0] = '\0';
  d.host[sizeof(d.host) - 1] = '\0';
  return d;
}

void init_peer_tracking(runtime_impl_t* rt, const process_desc_t* all)
{
  const process_desc_t& me = all[rt->rank_me];
  rt->peers.resize(rt->rank_n);
  rt->peer_why.resize(rt->rank_n);
  rt->peer_state.reset(new std::atomic<uint8_t>[rt->rank_n]);
  bool any_local = false, any_remote = false;
  for (int r = 0; r < rt->rank_n; ++r) {
    rt->peer_state[r].store(0, std::memory_order_relaxed);
    peer_info_t& p = rt->peers[r];
    p.pid = all[r].pid;
    p.start_time = all[r].start_time;
    p.same_host = r != rt->rank_me && me.host[0] != '\0' &&
                  std::strncmp(me.host, all[r].host, sizeof(me.host)) == 0 &&
                  me.pidns == all[r].pidns && p.pid > 0;
    p.remote = r != rt->rank_me && !p.same_host;
    any_local = any_local || p.same_host;
    any_remote = any_remote || p.remote;
  }
  rt->check_local = any_local;
  rt->watch_remote = any_remote && rt->attr.peer_timeout > 0;
  // one interval serves both: the local one, shortened when the timeout
  // is short, so that the timeout spans at least 10 epochs
  size_t tick_ms =
      rt->attr.peer_check_interval > 0 ? rt->attr.peer_check_interval : 100;
  if (rt->watch_remote) {
    tick_ms = std::min<size_t>(tick_ms,
                               std::max<size_t>(1, rt->attr.peer_timeout / 10));
    const size_t epochs = (rt->attr.peer_timeout + tick_ms - 1) / tick_ms;
    rt->timeout_epochs = static_cast<uint32_t>(
        std::min<size_t>(epochs, std::numeric_limits<uint32_t>::max() / 2));
    rt->heartbeat_epochs = std::max<uint32_t>(1, rt->timeout_epochs / 5);
    rt->heard.reset(new std::atomic<uint32_t>[rt->rank_n]);
    for (int r = 0; r < rt->rank_n; ++r)
      rt->heard[r].store(0, std::memory_order_relaxed);
  }
  const bool periodic_local = any_local && rt->attr.peer_check_interval > 0;
  rt->peer_check_ns = periodic_local || rt->watch_remote
                          ? static_cast<int64_t>(tick_ms) * 1000000
                          : 0;
  if (rt->peer_check_ns)
    rt->next_peer_check.store(coarse_now_ns() + rt->peer_check_ns,
                              std::memory_order_relaxed);
}

void check_peers_now(runtime_impl_t* rt)
{
  if (!rt->check_local) return;
  for (int r = 0; r < rt->rank_n; ++r) {
    const peer_info_t& p = rt->peers[r];
    if (!p.same_host || rt->peer_state[r].load(std::memory_order_relaxed))
      continue;
    liveness_t l = probe(p.pid, p.start_time);
    if (l == liveness_t::alive || l == liveness_t::unknown) continue;
    std::ostringstream why;
    why << "its process (pid " << p.pid << " on this host) "
        << (l == liveness_t::gone     ? "is gone"
            : l == liveness_t::zombie ? "has exited or was killed"
                                      : "is gone (the pid was reused)");
    mark_peer_failed(rt, r, why.str());
  }
}

void maybe_check_peers(runtime_impl_t* rt, device_impl_t* dev)
{
  int64_t next = rt->next_peer_check.load(std::memory_order_relaxed);
  int64_t now = coarse_now_ns();
  if (now < next) return;
  // one thread per interval does the check
  if (!rt->next_peer_check.compare_exchange_strong(
          next, now + rt->peer_check_ns, std::memory_order_relaxed))
    return;
  // (peer_check_interval 0: the same-host processes only on errors)
  if (rt->attr.peer_check_interval > 0) check_peers_now(rt);
  if (rt->watch_remote) watch_remote_peers(rt, dev);
}

bool network_error_is_peer_failure(runtime_impl_t* rt, int rank,
                                   const char* why)
{
  if (rank >= rt->rank_n || rank == rt->rank_me) return false;
  if (rank >= 0 && peer_is_failed(rt, rank)) return true;
  if (rank >= 0 && !rt->peers[rank].same_host) {
    mark_peer_failed(rt, rank,
                     std::string("the network reported: ") +
                         (why ? why : "an error") +
                         " (a peer on another host)");
    return true;
  }
  for (int i = 0; i < 50; ++i) {
    check_peers_now(rt);
    if (rank >= 0 ? peer_is_failed(rt, rank)
                  : rt->nfailed.load(std::memory_order_relaxed) > 0)
      return true;
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, nullptr);
  }
  return false;
}

status_t peer_failure_status(int rank, void* buffer, tag_t tag,
                             void* user_context)
{
  status_t s(errorcode_t::fatal_peer_failure);
  s.rank = rank;
  s.buffer = buffer;
  s.size = 0;
  s.tag = tag;
  s.user_context = user_context;
  return s;
}

void mark_peer_failed(runtime_impl_t* rt, int rank, const std::string& why)
{
  if (rank < 0 || rank >= rt->rank_n || rank == rt->rank_me) return;
  {
    std::lock_guard<std::mutex> lock(rt->peer_mu);
    if (rt->peer_state[rank].load(std::memory_order_relaxed) != 0) return;
    rt->peer_why[rank] = why;
    rt->peer_state[rank].store(kPeerFailedQuiet, std::memory_order_release);
    rt->nfailed.fetch_add(1, std::memory_order_acq_rel);
  }
  // from here on posts naming `rank` throw, and its messages are dropped;
  // what was posted before waits in the tables below
  size_t nops = fail_recvs(rt, rank);
  // sends with comp_semantic network on every device (free_device waits
  // for no poller before it deletes a device: the attentive-progress rule)
  rt->attentive_pollers.fetch_add(1, std::memory_order_acq_rel);
  const size_t ndev = rt->devices.size_hint();
  for (size_t i = 0; i < ndev; ++i)
    if (device_impl_t* d = rt->devices.get(i, nullptr))
      nops += fail_network_sends(d, rank);
  rt->attentive_pollers.fetch_sub(1, std::memory_order_release);
  std::vector<transfer_op_t*> dead;
  nops += fail_rdv_peer(rt, rank, &dead);
  nops += fail_rma_peer(rt, rank, &dead);
  {
    std::lock_guard<std::mutex> lock(rt->peer_mu);
    rt->failed_ops.insert(rt->failed_ops.end(), dead.begin(), dead.end());
  }
  // progress throws for `rank` only where it had something outstanding,
  // unless the runtime asks for the report everywhere
  if (nops > 0 || rt->attr.peer_failure_everywhere)
    note_peer_failure_felt(rt, rank);
}

void note_peer_failure_felt(runtime_impl_t* rt, int rank)
{
  uint8_t expected = kPeerFailedQuiet;
  if (rt->peer_state[rank].compare_exchange_strong(
          expected, kPeerFailedUnreported, std::memory_order_acq_rel))
    rt->nunreported.fetch_add(1, std::memory_order_release);
}

void report_peer_failure(runtime_impl_t* rt)
{
  for (int r = 0; r < rt->rank_n; ++r) {
    uint8_t expected = kPeerFailedUnreported;
    if (!rt->peer_state[r].compare_exchange_strong(
            expected, kPeerFailedReported, std::memory_order_acq_rel))
      continue;
    rt->nunreported.fetch_sub(1, std::memory_order_relaxed);
    std::string why;
    {
      std::lock_guard<std::mutex> lock(rt->peer_mu);
      why = rt->peer_why[r];
    }
    std::ostringstream os;
    os << "progress: rank " << r << " failed: " << why;
    throw peer_failure_error(os.str(), r);
  }
}

void throw_peer_failed(runtime_impl_t* rt, int rank, const char* call)
{
  std::string why;
  {
    std::lock_guard<std::mutex> lock(rt->peer_mu);
    why = rt->peer_why[rank];
  }
  std::ostringstream os;
  os << call << ": rank " << rank << " has failed (" << why << ")";
  throw peer_failure_error(os.str(), rank);
}

bool is_peer_failed_x::call_impl(int rank, runtime_t runtime)
{
  runtime_impl_t* rt = resolve_runtime(runtime, "is_peer_failed");
  if (rank < 0 || rank >= rt->rank_n)
    util::throw_fatal("is_peer_failed: rank ", rank, " is out of range [0, ",
                      rt->rank_n, ")");
  return peer_is_failed(rt, rank);
}

void release_failed_ops(runtime_impl_t* rt)
{
  std::lock_guard<std::mutex> lock(rt->peer_mu);
  for (transfer_op_t* op : rt->failed_ops) delete op;
  rt->failed_ops.clear();
}

}  // namespace lci
