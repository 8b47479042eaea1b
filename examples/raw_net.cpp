// The raw network layer (net_post_*, net_poll_cq) between 2 ranks: a
// ping-pong of plain messages, then a put with immediate data that tells
// the target where the bytes landed. No library protocol: each side sees
// exactly the bytes and completions it asked for (docs/RUNTIME_DEVELOPERS.md,
// "The raw network layer").
//
//   lcrun -n 2 ./raw_net
#include <cstdio>
#include <cstdlib>
#include <lci.hpp>
#include <vector>

namespace
{

std::vector<lci::net_status_t> g_early;  // polled before they were awaited

// Polls once, keeping what completed (a refused post polls too: the
// provider may need it to make room).
void poll()
{
  lci::net_status_t s[4];
  size_t n = lci::net_poll_cq(4, s);
  for (size_t i = 0; i < n; ++i) {
    if (s[i].opcode == lci::net_opcode_t::ERROR) {
      std::fprintf(stderr, "raw_net: an operation with rank %d failed\n",
                   s[i].rank);
      std::exit(1);
    }
    g_early.push_back(s[i]);
  }
}

// Polls until a completion of `op` arrives; returns it.
lci::net_status_t wait(lci::net_opcode_t op)
{
  for (;;) {
    for (size_t i = 0; i < g_early.size(); ++i) {
      if (g_early[i].opcode == op) {
        lci::net_status_t s = g_early[i];
        g_early.erase(g_early.begin() + static_cast<long>(i));
        return s;
      }
    }
    poll();
  }
}

void post_recv(void* buf, size_t size)
{
  while (lci::net_post_recv(buf, size, lci::MR_HOST).is_retry()) poll();
}

void send(int rank, void* buf, size_t size)
{
  while (lci::net_post_send(rank, buf, size, lci::MR_HOST).is_retry()) poll();
  wait(lci::net_opcode_t::SEND);  // the buffer may be reused now
}

}  // namespace

int main()
{
  // the default device keeps no receives of its own: raw receives get
  // every message
  lci::g_runtime_init_x().alloc_default_packet_pool(false)();
  if (lci::get_rank_n() != 2) {
    std::fprintf(stderr, "raw_net: run with 2 ranks\n");
    lci::g_runtime_fina();
    return 1;
  }
  const int me = lci::get_rank_me(), peer = 1 - me;

  // ping-pong: rank 0 sends a number, rank 1 answers with it plus one
  long value = 41;
  post_recv(&value, sizeof(value));  // posted before the peer sends
  if (me == 0) send(peer, &value, sizeof(value));
  wait(lci::net_opcode_t::RECV);
  if (me == 1) {
    ++value;
    send(peer, &value, sizeof(value));
  }
  if (me == 0) std::printf("rank 0: got %ld back\n", value);

  // a put: rank 1 ships its region's rmr, rank 0 writes into it with
  // immediate data, rank 1 learns from the REMOTE_WRITE that it is there
  char region[64] = {};
  lci::mr_t mr = lci::register_memory(region, sizeof(region));
  lci::rmr_t rmr = lci::get_rmr(mr);
  bool imm = lci::get_default_net_context().get_attr_support_putimm();
  if (me == 1) {
    send(peer, &rmr, sizeof(rmr));
    if (imm) {
      lci::net_status_t s = wait(lci::net_opcode_t::REMOTE_WRITE);
      std::printf("rank 1: \"%s\" at offset %u\n", region + s.imm_data,
                  s.imm_data);
    }
    char done;
    post_recv(&done, 1);
    wait(lci::net_opcode_t::RECV);  // rank 0 is done with the region
  } else {
    post_recv(&rmr, sizeof(rmr));
    wait(lci::net_opcode_t::RECV);
    if (imm) {
      static char hello[] = "hello over RDMA";
      lci::mr_t hmr = lci::register_memory(hello, sizeof(hello));
      while (lci::net_post_putImm_x(peer, hello, sizeof(hello), hmr, 16, rmr)
                 .imm_data(16)()
                 .is_retry())
        poll();
      wait(lci::net_opcode_t::WRITE);
      lci::deregister_memory(&hmr);
    }
    char done = 1;
    send(peer, &done, 1);
  }
  lci::deregister_memory(&mr);
  lci::g_runtime_fina();
  return 0;
}
