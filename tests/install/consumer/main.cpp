// Uses an installed LCI without a launcher: one rank that sends a message to
// itself. Exit status 0 on success.
#include <cstdio>
#include <cstring>
#include <lci.hpp>

int main()
{
  lci::g_runtime_init();
  const int rank = lci::get_rank_me();
  const int nranks = lci::get_rank_n();
  if (nranks != 1) {
    std::fprintf(stderr, "consumer: expected 1 rank, got %d\n", nranks);
    return 1;
  }

  char out[] = "hello from the installed LCI";
  char in[sizeof(out)] = {};
  const lci::tag_t tag = 7;

  lci::comp_t sync = lci::alloc_sync();
  lci::status_t r;
  do {
    r = lci::post_recv(rank, in, sizeof(in), tag, sync);
    if (r.is_retry()) lci::progress();
  } while (r.is_retry());
  lci::status_t s;
  do {
    // COMP_NULL: returns once the send is complete
    s = lci::post_send(rank, out, sizeof(out), tag, lci::COMP_NULL);
    if (s.is_retry()) lci::progress();
  } while (s.is_retry());
  if (r.is_posted()) lci::sync_wait(sync, &r);  // drives progress

  const bool ok = r.rank == rank && r.size == sizeof(out) &&
                  std::memcmp(in, out, sizeof(out)) == 0;
  std::printf(
      "consumer: rank %d of %d received '%s' (%zu bytes from rank %d)\n", rank,
      nranks, in, r.size, r.rank);

  lci::free_comp(&sync);
  lci::g_runtime_fina();
  if (!ok) {
    std::fprintf(stderr, "consumer: wrong message or status\n");
    return 1;
  }
  return 0;
}
