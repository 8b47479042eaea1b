/* hello_world through the C interface: every rank sends "hello" to every
 * rank (itself included) with lci_post_send and receives one message from
 * each with lci_post_recv, then prints them. Exit status 0 when every
 * greeting arrived intact.
 *
 *   lcrun -n 2 ./hello_world_c */
#include <lci.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a failed call: print what went wrong and stop */
static void die(const char* call, lci_error_t rc)
{
  fprintf(stderr, "hello_world_c: %s: %s: %s\n", call,
          lci_get_errorcode_str(rc), lci_error_string());
  exit(1);
}

int main(void)
{
  lci_error_t rc;
  if ((rc = lci_g_runtime_init(NULL, NULL)) != LCI_DONE) die("g_runtime_init", rc);
  int rank = 0, nranks = 0;
  lci_get_rank_me(NULL, &rank);
  lci_get_rank_n(NULL, &nranks);

  /* one receive per peer, completed by a synchronizer with that threshold */
  lci_alloc_sync_args_t sa = LCI_ALLOC_SYNC_ARGS_INIT;
  sa.threshold = nranks;
  lci_comp_t sync;
  if ((rc = lci_alloc_sync(&sa, &sync)) != LCI_DONE) die("alloc_sync", rc);
  enum { MSG = 64 };
  char* inbox = (char*)calloc((size_t)nranks, MSG);
  const lci_tag_t tag = 42;
  for (int peer = 0; peer < nranks; ++peer) {
    lci_status_t s;
    do {
      rc = lci_post_recv(peer, inbox + peer * MSG, MSG, tag, sync, NULL, &s);
      lci_progress(NULL);
    } while (lci_is_retry(rc));
    if (lci_is_fatal(rc)) die("post_recv", rc);
    if (lci_is_done(rc)) lci_comp_signal(sync, s);
  }

  char msg[MSG];
  snprintf(msg, sizeof(msg), "hello from rank %d of %d", rank, nranks);
  for (int peer = 0; peer < nranks; ++peer) {
    /* LCI_COMP_NULL: return once the message has left */
    do {
      rc = lci_post_send(peer, msg, strlen(msg) + 1, tag, LCI_COMP_NULL, NULL,
                         NULL);
    } while (lci_is_retry(rc));
    if (lci_is_fatal(rc)) die("post_send", rc);
  }

  lci_status_t* statuses =
      (lci_status_t*)malloc(sizeof(lci_status_t) * (size_t)nranks);
  if ((rc = lci_sync_wait(sync, statuses, NULL)) != LCI_DONE)
    die("sync_wait", rc);
  int bad = 0;
  for (int i = 0; i < nranks; ++i) {
    const lci_status_t* s = &statuses[i];
    char expect[MSG];
    snprintf(expect, sizeof(expect), "hello from rank %d of %d", s->rank,
             nranks);
    printf("rank %d got '%s' (%zu bytes from rank %d)\n", rank,
           (const char*)s->buffer, s->size, s->rank);
    if (strcmp((const char*)s->buffer, expect) != 0 ||
        s->size != strlen(expect) + 1)
      bad = 1;
  }

  lci_free_comp(&sync);
  free(statuses);
  free(inbox);
  if ((rc = lci_g_runtime_fina()) != LCI_DONE) die("g_runtime_fina", rc);
  return bad;
}
