/* The C twin of main.cpp: uses an installed LCI through lci.h without a
 * launcher, one rank that sends a message to itself. Exit status 0 on
 * success. */
#include <lci.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
  if (lci_g_runtime_init(NULL, NULL) != LCI_DONE) {
    fprintf(stderr, "consumer: %s\n", lci_error_string());
    return 1;
  }
  int rank = -1, nranks = -1;
  lci_get_rank_me(NULL, &rank);
  lci_get_rank_n(NULL, &nranks);
  if (nranks != 1) {
    fprintf(stderr, "consumer: expected 1 rank, got %d\n", nranks);
    return 1;
  }

  char out[] = "hello from the installed LCI";
  char in[sizeof(out)] = {0};
  const lci_tag_t tag = 7;
  lci_comp_t sync;
  lci_alloc_sync(NULL, &sync);
  lci_status_t r;
  lci_error_t rc;
  while (lci_is_retry(
      rc = lci_post_recv(rank, in, sizeof(in), tag, sync, NULL, &r)))
    lci_progress(NULL);
  /* LCI_COMP_NULL: returns once the send is complete */
  while (lci_is_retry(rc = lci_post_send(rank, out, sizeof(out), tag,
                                         LCI_COMP_NULL, NULL, NULL)))
    lci_progress(NULL);
  lci_sync_wait(sync, &r, NULL);

  const int ok = rc == LCI_DONE && r.rank == rank && r.size == sizeof(out) &&
                 memcmp(in, out, sizeof(out)) == 0;
  printf("consumer: rank %d of %d received '%s' (%zu bytes from rank %d)\n",
         rank, nranks, in, r.size, r.rank);
  lci_free_comp(&sync);
  lci_g_runtime_fina();
  if (!ok) {
    fprintf(stderr, "consumer: wrong message or status\n");
    return 1;
  }
  return 0;
}
