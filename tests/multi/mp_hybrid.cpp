// The per-peer routing of the hybrid backend (docs/ARCHITECTURE.md, "The
// hybrid backend"), run under lcrun on one machine with the test knob
// LCI_ATTR_SHM_NODE_SPLIT=k (rank r pretends to be on node r % k).
//
//   --expect B        get_attr_backend() must report B (auto resolves to shm
//                     or hybrid); on hybrid, the device's net_state must
//                     name exactly the ranks r with r % k == me % k as the
//                     ones reached through native shm
//   then, with every rank (self included): a rendezvous send out of, and a
//   receive into, buffers at an odd offset inside registered regions given
//   with .mr() (the RTS/RTR carry a non-zero offset), and a put and a get
//   at a non-zero remote_disp; every byte checked
//   --expect-fatal T  alloc_runtime must throw a fatal_error whose message
//                     contains T (auto with remote ranks and no usable
//                     network provider); nothing else runs
//   --ppn P           several real hosts (tests/multihost), ranks placed in
//                     blocks of P: rank r must run on host node<r / P>, and
//                     the native shm ranks must be exactly those of its
//                     block (instead of the split residues)
//   --expect-net S    the network side's net_state (ofi: provider and
//                     domain, e.g. "ofi tcp;ofi_rxm domain eth0") must
//                     contain S
// Exit status 0 on success.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <lci.hpp>
#include <string>
#include <vector>

#include "core/introspect.hpp"
#include "mp_check.hpp"

namespace
{

using mp::g_failures;
using mp::g_rank;

unsigned char pattern(int src, int dst, size_t i)
{
  uint64_t x = (static_cast<uint64_t>(src) << 48) ^
               (static_cast<uint64_t>(dst) << 32) ^ i;
  x *= 0x9E3779B97F4A7C15ull;
  return static_cast<unsigned char>(x >> 56);
}

size_t split_of_env()
{
  const char* v = std::getenv("LCI_ATTR_SHM_NODE_SPLIT");
  size_t k = v ? std::strtoull(v, nullptr, 10) : 1;
  return k < 1 ? 1 : k;
}

void check_routing(const std::string& expect, int ppn,
                   const std::string& expect_net)
{
  const int me = lci::get_rank_me(), n = lci::get_rank_n();
  const std::string backend = lci::get_g_runtime().get_attr_backend();
  CHECK(backend == expect, "backend in force is %s, expected %s",
        backend.c_str(), expect.c_str());
  if (ppn > 0) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    const std::string want_host = "node" + std::to_string(me / ppn);
    CHECK(want_host == host, "runs on host %s, expected %s", host,
          want_host.c_str());
  }
  if (backend != "hybrid") return;
  const size_t k = split_of_env();
  std::string want = "local ranks";
  for (int r = 0; r < n; ++r)
    if (ppn > 0 ? r / ppn == me / ppn
                : static_cast<size_t>(r) % k == static_cast<size_t>(me) % k)
      want += " " + std::to_string(r);
  want += ";";
  const std::string state = lci::introspect::net_state();
  CHECK(state.compare(0, want.size(), want) == 0,
        "net_state '%.80s' does not start with '%s'", state.c_str(),
        want.c_str());
  CHECK(expect_net.empty() || state.find(expect_net) != std::string::npos,
        "net_state '%s' does not name '%s'", state.c_str(), expect_net.c_str());
  if (me == 0) std::printf("mp_hybrid: rank 0 net_state: %s\n", state.c_str());
}

// rendezvous messages to and from every rank, out of and into registered
// regions at an offset, given with .mr()
void rendezvous_at_offset()
{
  const int me = lci::get_rank_me(), n = lci::get_rank_n();
  const size_t size = 3 * lci::get_max_bcopy_size() + 17;
  const size_t off = 4096 + 8;
  const size_t slot = off + size;
  std::vector<unsigned char> in(slot * n), out(slot * n);
  lci::mr_t inmr = lci::register_memory(in.data(), in.size());
  lci::mr_t outmr = lci::register_memory(out.data(), out.size());
  lci::comp_t sync = lci::alloc_sync_x().threshold(n)();
  for (int r = 0; r < n; ++r) {
    lci::status_t s =
        lci::post_recv_x(r, in.data() + r * slot + off, size, 77, sync)
            .mr(inmr)();
    if (s.is_done()) lci::comp_signal(sync, s);
  }
  for (int r = 0; r < n; ++r) {
    unsigned char* p = out.data() + r * slot + off;
    for (size_t i = 0; i < size; ++i) p[i] = pattern(me, r, i);
    lci::post_send_x(r, p, size, 77, lci::COMP_NULL).mr(outmr)();
  }
  while (!lci::sync_test(sync, nullptr)) lci::progress();
  for (int r = 0; r < n; ++r) {
    const unsigned char* p = in.data() + r * slot + off;
    size_t bad = 0;
    for (size_t i = 0; i < size; ++i) bad += p[i] != pattern(r, me, i);
    CHECK(bad == 0, "rendezvous from rank %d: %zu wrong bytes", r, bad);
  }
  lci::free_comp(&sync);
  lci::barrier();
  lci::deregister_memory(&inmr);
  lci::deregister_memory(&outmr);
}

// Every rank's rmr of a region (allgather).
std::vector<lci::rmr_t> exchange(lci::mr_t mr)
{
  lci::rmr_t mine = lci::get_rmr(mr);
  std::vector<lci::rmr_t> all(lci::get_rank_n());
  lci::allgather(&mine, all.data(), sizeof(mine));
  return all;
}

// a put into, and a get out of, every rank's region at slot `me`
void rma_at_disp()
{
  const int me = lci::get_rank_me(), n = lci::get_rank_n();
  const size_t size = 100000;
  const size_t slot = size + 24;
  std::vector<unsigned char> region(slot * n + 8), src(size), got(size);
  lci::mr_t mr = lci::register_memory(region.data(), region.size());
  std::vector<lci::rmr_t> rmrs = exchange(mr);
  // the region's slot r holds what rank r put; the get reads slot `me` of
  // every peer's region, which this rank filled itself
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < size; ++i) src[i] = pattern(me, r, i);
    lci::post_put(r, src.data(), size, lci::COMP_NULL, 8 + me * slot, rmrs[r]);
  }
  lci::barrier();
  for (int r = 0; r < n; ++r) {
    size_t bad = 0;
    const unsigned char* p = region.data() + 8 + r * slot;
    for (size_t i = 0; i < size; ++i) bad += p[i] != pattern(r, me, i);
    CHECK(bad == 0, "put from rank %d: %zu wrong bytes", r, bad);
  }
  for (int r = 0; r < n; ++r) {
    std::memset(got.data(), 0, size);
    lci::post_get(r, got.data(), size, lci::COMP_NULL, 8 + me * slot, rmrs[r]);
    size_t bad = 0;
    for (size_t i = 0; i < size; ++i) bad += got[i] != pattern(me, r, i);
    CHECK(bad == 0, "get from rank %d: %zu wrong bytes", r, bad);
  }
  lci::barrier();
  lci::deregister_memory(&mr);
}

}  // namespace

int main(int argc, char** argv)
{
  std::string expect, expect_fatal, expect_net;
  int ppn = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--expect")
      expect = argv[i + 1];
    else if (a == "--expect-fatal")
      expect_fatal = argv[i + 1];
    else if (a == "--ppn")
      ppn = std::atoi(argv[i + 1]);
    else if (a == "--expect-net")
      expect_net = argv[i + 1];
  }
  if (!expect_fatal.empty()) {
    try {
      lci::runtime_t rt = lci::alloc_runtime();
      std::fprintf(stderr, "mp_hybrid: alloc_runtime succeeded (backend %s)\n",
                   rt.get_attr_backend().c_str());
      lci::free_runtime(&rt);
      return 1;
    } catch (const lci::fatal_error& e) {
      const bool ok = std::strstr(e.what(), expect_fatal.c_str()) != nullptr;
      std::printf("mp_hybrid: alloc_runtime refused: %s (%s)\n", e.what(),
                  ok ? "ok" : "FAILED: not the expected message");
      return ok ? 0 : 1;
    }
  }
  try {
    lci::g_runtime_init();
    g_rank = lci::get_rank_me();
    if (!expect.empty()) check_routing(expect, ppn, expect_net);
    rendezvous_at_offset();
    rma_at_disp();
    std::printf(
        "mp_hybrid: rank %d of %d (backend %s, %s, rdv %s): %s "
        "(%d failures)\n",
        g_rank, lci::get_rank_n(),
        lci::get_g_runtime().get_attr_backend().c_str(),
        lci::get_g_runtime().get_attr_ofi_provider_name().c_str(),
        lci::get_attr_rdv_protocol_str(
            lci::get_g_runtime().get_attr_rdv_protocol()),
        g_failures ? "FAILED" : "ok", g_failures.load());
    lci::g_runtime_fina();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mp_hybrid: rank %d: %s\n", g_rank, e.what());
    return 1;
  }
  return g_failures ? 1 : 0;
}
