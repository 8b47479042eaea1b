// Edge cases of the hierarchical collectives (docs/COLLECTIVES.md,
// "Hierarchical collectives"), 4 ranks on two fake nodes
// (LCI_ATTR_SHM_NODE_SPLIT=2: ranks 0 and 2 on node 0, 1 and 3 on node 1,
// leaders 0 and 1):
//
//   mp_coll_hier_edge mismatch-nodes
//     node 0 passes 1 item to an allreduce, node 1 two: the leaders'
//     point-to-point part sees it (leader 0's receive refuses leader 1's
//     larger message, leader 1 gets fewer bytes than it expects); every rank
//     gets a fatal_error, none hangs, nothing is written past a buffer, and
//     the next collective fails at once on every rank.
//   mp_coll_hier_edge mismatch-node
//     rank 2 passes two items where the others pass one: the ranks of
//     node 0 get a fatal_error naming the call, none hangs.
//   mp_coll_hier_edge abandon
//     the leaders start a nonblocking allreduce that the other ranks never
//     join, and the runtime is freed with it queued: the team frees its
//     state, its unstarted point-to-point part included, without a crash
//     or a double free (the asan preset checks the frees; a leak it cannot
//     see: the unstarted part stays reachable through the live set of
//     completion objects).
//
// Exit status 0 on success.
#include <cstdio>
#include <cstring>
#include <lci.hpp>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "coll/shm_team.hpp"
#include "mp_check.hpp"
#include "resource/runtime.hpp"

namespace
{

using mp::g_rank;

// 64-bit words added
void add_u64(const void* l, const void* r, void* d, size_t n)
{
  for (size_t i = 0; i < n; ++i)
    static_cast<uint64_t*>(d)[i] =
        static_cast<const uint64_t*>(l)[i] + static_cast<const uint64_t*>(r)[i];
}

constexpr unsigned char kGuard = 0xa5;

// the error of a blocking allreduce of `count` words ("" if none)
std::string allreduce_error(size_t count, std::vector<uint64_t>* out)
{
  std::vector<uint64_t> in(count, static_cast<uint64_t>(g_rank + 1));
  try {
    lci::allreduce(in.data(), out->data(), count, sizeof(uint64_t), &add_u64);
  } catch (const lci::peer_failure_error& e) {
    return std::string("unexpected peer failure: ") + e.what();
  } catch (const lci::fatal_error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const char* what)
{
  return s.find(what) != std::string::npos;
}

void mismatch_nodes()
{
  const size_t count = g_rank % 2 == 0 ? 1 : 2;
  // room for two words and guard bytes after the expected count
  std::vector<uint64_t> out(4);
  std::memset(out.data(), kGuard, out.size() * sizeof(uint64_t));
  std::string e;
  {
#if defined(__SANITIZE_ADDRESS__)
    // leader 0's point-to-point part never ends (its receive refused the
    // message) and stays allocated, as documented
    __lsan::ScopedDisabler keep;
#endif
    e = allreduce_error(count, &out);
  }
  CHECK(!e.empty(), "an allreduce of %zu words against %zu went unnoticed",
        count, 3 - count);
  const auto* bytes = reinterpret_cast<const unsigned char*>(out.data());
  for (size_t i = count * 8; i < out.size() * 8; ++i)
    CHECK(bytes[i] == kGuard, "byte %zu past the output was written", i);
  switch (g_rank) {
    case 0:
      CHECK(contains(e, "16-byte message") && contains(e, "8-byte receive"),
            "message '%s'", e.c_str());
      break;
    case 1:
      CHECK(contains(e, "allreduce") && contains(e, "sent 8 bytes") &&
                contains(e, "16 were expected"),
            "message '%s'", e.c_str());
      break;
    default:
      CHECK(contains(e, "allreduce") && contains(e, "representative"),
            "message '%s'", e.c_str());
  }
  // the team is unusable now: the next collective fails at once everywhere
  bool raised = false;
  try {
    lci::barrier();
  } catch (const lci::fatal_error&) {
    raised = true;
  }
  CHECK(raised, "a barrier after the failed allreduce completed");
}

void mismatch_node()
{
  const size_t count = g_rank == 2 ? 2 : 1;
  std::vector<uint64_t> out(4);
  std::memset(out.data(), kGuard, out.size() * sizeof(uint64_t));
  std::string e = allreduce_error(count, &out);
  if (g_rank % 2 == 0) {
    CHECK(contains(e, "allreduce") && contains(e, "same sizes"), "message '%s'",
          e.c_str());
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(out.data());
  for (size_t i = count * 8; i < out.size() * 8; ++i)
    CHECK(bytes[i] == kGuard, "byte %zu past the output was written", i);
}

void abandon()
{
  if (g_rank > 1) return;
  uint64_t in = 1, out = 0;
  lci::comp_t sync = lci::alloc_sync();
  lci::allreduce_x(&in, &out, 1, sizeof(uint64_t), &add_u64).comp(sync)();
  for (int i = 0; i < 100; ++i) lci::progress();
  CHECK(!lci::sync_test(sync, nullptr),
        "an allreduce that half the ranks never joined completed");
  lci::free_comp(&sync);
}

}  // namespace

int main(int argc, char** argv)
{
  const std::string what = argc > 1 ? argv[1] : "";
  if (what != "mismatch-nodes" && what != "mismatch-node" &&
      what != "abandon") {
    std::fprintf(stderr,
                 "usage: mp_coll_hier_edge mismatch-nodes|mismatch-node|"
                 "abandon\n");
    return 2;
  }
  try {
    if (!mp::init_ranks("mp_coll_hier_edge", 4)) return 2;
    auto* team = static_cast<lci::coll::shm_team_t*>(
        lci::get_g_runtime().p_impl->coll_team.get());
    CHECK(team && team->hierarchical(), "the team is not hierarchical");
    if (!team || !team->hierarchical()) return 1;
    if (what == "mismatch-nodes")
      mismatch_nodes();
    else if (what == "mismatch-node")
      mismatch_node();
    else
      abandon();
    lci::g_runtime_fina();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
    return 1;
  }
  if (mp::exit_status() != 0) return 1;
  std::printf("mp_coll_hier_edge %s: rank %d: ok\n", what.c_str(), g_rank);
  return 0;
}
