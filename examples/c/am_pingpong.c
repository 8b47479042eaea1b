/* Active-message ping-pong through the C interface: rank 2k sends an
 * 8-byte active message to rank 2k+1, which answers with one; each side
 * takes the other's message from a completion queue (its remote completion)
 * and checks the sequence number it carries. With an odd number of ranks
 * the last one only makes progress. Exit status 0 when every message
 * arrived in order.
 *
 *   lcrun -n 2 ./am_pingpong_c [iterations] */
#include <lci.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char* call, lci_error_t rc)
{
  fprintf(stderr, "am_pingpong_c: %s: %s: %s\n", call,
          lci_get_errorcode_str(rc), lci_error_string());
  exit(1);
}

/* an active message of the 8 bytes at `value` to `peer`'s queue */
static void send_am(int peer, uint64_t* value, lci_rcomp_t rcomp)
{
  lci_error_t rc;
  do {
    /* LCI_COMP_NULL: return once the buffer may be reused */
    rc = lci_post_am(peer, value, sizeof(*value), LCI_COMP_NULL, rcomp, NULL,
                     NULL);
    if (lci_is_retry(rc)) lci_progress(NULL);
  } while (lci_is_retry(rc));
  if (lci_is_fatal(rc)) die("post_am", rc);
}

/* the next active message of the queue (driving progress meanwhile) */
static uint64_t recv_am(lci_comp_t cq, const lci_allocator_t* allocator)
{
  lci_status_t s;
  lci_error_t rc;
  while ((rc = lci_cq_pop(cq, &s)) == LCI_RETRY) lci_progress(NULL);
  if (rc != LCI_DONE) die("cq_pop", rc);
  uint64_t v;
  if (s.size != sizeof(v)) {
    fprintf(stderr, "am_pingpong_c: %zu bytes arrived, not 8\n", s.size);
    exit(1);
  }
  memcpy(&v, s.buffer, sizeof(v));
  /* the receiver owns an active message's buffer */
  allocator->deallocate(s.buffer, allocator->context);
  return v;
}

int main(int argc, char** argv)
{
  long iters = argc > 1 ? atol(argv[1]) : 10000;
  lci_error_t rc;
  if ((rc = lci_g_runtime_init(NULL, NULL)) != LCI_DONE) die("g_runtime_init", rc);
  int rank = 0, nranks = 0;
  lci_get_rank_me(NULL, &rank);
  lci_get_rank_n(NULL, &nranks);
  const lci_allocator_t* allocator;
  lci_get_allocator(NULL, &allocator);

  /* every rank registers its queue in the same order: the handles agree */
  lci_comp_t cq;
  lci_rcomp_t rcomp;
  if ((rc = lci_alloc_cq(NULL, &cq)) != LCI_DONE) die("alloc_cq", rc);
  if ((rc = lci_register_rcomp(cq, NULL, &rcomp)) != LCI_DONE)
    die("register_rcomp", rc);
  lci_barrier(NULL);

  const int peer = rank % 2 == 0 ? rank + 1 : rank - 1;
  if (peer < nranks) {
    for (long i = 0; i < iters; ++i) {
      uint64_t v = (uint64_t)i;
      if (rank % 2 == 0) {
        send_am(peer, &v, rcomp);
        v = recv_am(cq, allocator);
      } else {
        v = recv_am(cq, allocator);
        send_am(peer, &v, rcomp);
      }
      if (v != (uint64_t)i) {
        fprintf(stderr, "am_pingpong_c: rank %d: message %ld carried %llu\n",
                rank, i, (unsigned long long)v);
        return 1;
      }
    }
    printf("rank %d: %ld round trips with rank %d\n", rank, iters, peer);
  }

  lci_barrier(NULL);
  lci_deregister_rcomp(rcomp, NULL);
  lci_free_comp(&cq);
  if ((rc = lci_g_runtime_fina()) != LCI_DONE) die("g_runtime_fina", rc);
  return 0;
}
