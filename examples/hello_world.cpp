// Every rank sends "hello" to every rank (itself included) with post_send and
// receives one message from each with post_recv, then prints them.
//
//   lcrun -n 2 ./hello_world
#include <cstdio>
#include <cstring>
#include <lci.hpp>
#include <string>
#include <vector>

int main()
{
  lci::g_runtime_init();
  int rank = lci::get_rank_me();
  int nranks = lci::get_rank_n();

  // one receive per peer, completed by a synchronizer with that threshold
  lci::comp_t sync = lci::alloc_sync_x().threshold(nranks)();
  std::vector<std::vector<char>> inbox(nranks, std::vector<char>(64));
  const lci::tag_t tag = 42;
  for (int peer = 0; peer < nranks; ++peer) {
    lci::status_t s;
    do {
      s = lci::post_recv(peer, inbox[peer].data(), inbox[peer].size(), tag,
                         sync);
      lci::progress();
    } while (s.is_retry());
    if (s.is_done()) lci::comp_signal(sync, s);
  }

  for (int peer = 0; peer < nranks; ++peer) {
    std::string msg = "hello from rank " + std::to_string(rank) + " of " +
                      std::to_string(nranks);
    // COMP_NULL: block until the message has left
    lci::post_send(peer, msg.data(), msg.size() + 1, tag, lci::COMP_NULL);
  }

  std::vector<lci::status_t> statuses(nranks);
  lci::sync_wait(sync, statuses.data());
  for (const lci::status_t& s : statuses)
    std::printf("rank %d got '%s' (%zu bytes from rank %d)\n", rank,
                static_cast<char*>(s.buffer), s.size, s.rank);

  lci::free_comp(&sync);
  lci::g_runtime_fina();
  return 0;
}
