// A list of buffers in one post (the paper's Section 3.3.1): a message
// made of a header struct and a payload array, sent with one post_send
// and received into the two places it belongs with one post_recv; then
// the payload put into the next rank's registered region in two halves
// with one post_put that completes once.
//
//   lcrun -n 2 ./buffer_list
#include <cstdio>
#include <lci.hpp>
#include <vector>

struct header_t {
  int from;
  int count;
};

int main()
{
  lci::g_runtime_init();
  const int rank = lci::get_rank_me();
  const int nranks = lci::get_rank_n();
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;

  // send {header, payload} to the next rank, receive the previous one's
  header_t out_hdr{rank, 1000};
  std::vector<double> out(1000, rank + 0.5);
  header_t in_hdr{};
  std::vector<double> in(1000);
  lci::comp_t sync = lci::alloc_sync();
  lci::status_t r = lci::post_recv_x(prev, nullptr, 0, 1, sync)
                        .buffers({lci::buffer_t(&in_hdr, sizeof(in_hdr)),
                                  lci::buffer_t(in.data(), 8000)})();
  // COMP_NULL: returns when the list has been sent
  lci::post_send_x(next, nullptr, 0, 1, lci::COMP_NULL)
      .buffers({lci::buffer_t(&out_hdr, sizeof(out_hdr)),
                lci::buffer_t(out.data(), 8000)})();
  if (r.is_posted()) lci::sync_wait(sync, &r);
  bool ok = r.size == sizeof(in_hdr) + 8000 && in_hdr.from == prev &&
            in_hdr.count == 1000 && in[999] == prev + 0.5;

  // put the payload into the next rank's region, as two halves in reverse
  // order, with one post (the rmr travels as a plain message)
  std::vector<double> region(1000);
  lci::mr_t mr = lci::register_memory(region.data(), 8000);
  lci::rmr_t mine = lci::get_rmr(mr), theirs;
  r = lci::post_recv(next, &theirs, sizeof(theirs), 2, sync);
  lci::post_send(prev, &mine, sizeof(mine), 2, lci::COMP_NULL);
  if (r.is_posted()) lci::sync_wait(sync, &r);
  lci::post_put_x(next, nullptr, 0, lci::COMP_NULL, 0, lci::RMR_NULL)
      .buffers({lci::buffer_t(out.data(), 4000),
                lci::buffer_t(out.data() + 500, 4000)})
      .rbuffers({lci::rbuffer_t(4000, theirs), lci::rbuffer_t(0, theirs)})();
  lci::barrier();
  ok = ok && region[0] == prev + 0.5 && region[999] == prev + 0.5;

  std::printf("rank %d: %s\n", rank, ok ? "lists arrived" : "WRONG DATA");
  lci::deregister_memory(&mr);
  lci::free_comp(&sync);
  lci::g_runtime_fina();
  return ok ? 0 : 1;
}
