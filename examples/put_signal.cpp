// RMA put with signal: every rank registers a mailbox, ships its rmr (a
// plain struct) to the previous rank, and puts a message into the next
// rank's mailbox with a signal. The target learns the message has landed
// when its remote completion (a completion queue) is signalled with the
// tag; it reads the mailbox then, without any receive.
//
//   lcrun -n 2 ./put_signal
#include <cstdio>
#include <cstring>
#include <lci.hpp>
#include <string>

int main()
{
  lci::g_runtime_init();
  const int rank = lci::get_rank_me();
  const int nranks = lci::get_rank_n();
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;

  // the mailbox peers put into, and the completion queue they signal;
  // every rank registers its remote completions in the same order
  char mailbox[128] = {};
  lci::mr_t mr = lci::register_memory(mailbox, sizeof(mailbox));
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rcomp = lci::register_rcomp(cq);

  // the previous rank will put into our mailbox: send it our rmr, and get
  // the next rank's
  lci::rmr_t mine = lci::get_rmr(mr), theirs;
  lci::comp_t sync = lci::alloc_sync();
  lci::status_t s = lci::post_recv(next, &theirs, sizeof(theirs), 0, sync);
  lci::status_t sent;
  do {
    sent = lci::post_send(prev, &mine, sizeof(mine), 0, lci::COMP_NULL_RETRY);
    lci::progress();
  } while (sent.is_retry());
  if (s.is_posted()) lci::sync_wait(sync, nullptr);

  // put with signal: the local completion (COMP_NULL blocks) means our
  // buffer is free; the target's cq gets the tag once the data is there
  std::string msg = "hello from rank " + std::to_string(rank);
  lci::post_put_x(next, msg.data(), msg.size() + 1, lci::COMP_NULL,
                  /*remote_disp=*/0, theirs)
      .remote_comp(rcomp)
      .tag(7)();

  lci::status_t in;
  do {
    lci::progress();
    in = lci::cq_pop(cq);
  } while (in.is_retry());
  std::printf("rank %d: signal from rank %d, tag %llu, %zu bytes at %p: '%s'\n",
              rank, in.rank, static_cast<unsigned long long>(in.tag), in.size,
              in.buffer, mailbox);

  // the signal also says the previous rank is done with our mailbox (its
  // put is complete), so it may go
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&cq);
  lci::free_comp(&sync);
  lci::deregister_memory(&mr);
  lci::g_runtime_fina();
  return 0;
}
