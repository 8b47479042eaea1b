/* The communication pattern of PaRSEC's LCI backend (Mor, Bosilca, Snir,
 * ICPP 2023, Section 5.3) through the C interface, as a program that checks
 * itself.
 *
 * Threads of every rank:
 * - workers (--workers, default 3) produce data items (--items each,
 *   --size bytes): a worker fills a buffer, registers it and sends an
 *   activation active message naming it (its rmr, size and id) to the next
 *   rank; the message lands in that rank's activation queue;
 * - a dedicated progress thread, the only caller of lci_progress: it drains
 *   the network, matches, runs the protocols and signals completion queues;
 * - a communication thread that drains the completion queues: up to five
 *   activations, for each a get of the data from its owner with a remote
 *   completion (the owner's release queue is signalled once the data is
 *   read), then every completed get (the bulk queue: check the bytes), then
 *   every release (deregister and free the item); and again while any of
 *   them found work.
 *
 *   lcrun -n 2 ./parsec_pattern_c [--workers 3] [--items 200] [--size 16384]
 *
 * Exit status 0 when every item arrived intact and every item was
 * released. */
#include <lci.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char* call, lci_error_t rc)
{
  fprintf(stderr, "parsec_pattern_c: %s: %s: %s\n", call,
          lci_get_errorcode_str(rc), lci_error_string());
  exit(1);
}

/* the activation message (an active message to the consumer) */
typedef struct activation_t {
  uint64_t id;   /* worker * items + item */
  uint64_t size; /* bytes of the item */
  lci_rmr_t rmr; /* where to get them */
} activation_t;

typedef struct item_t {
  unsigned char* data;
  lci_mr_t mr;
} item_t;

/* a get in flight: where its bytes land */
typedef struct fetch_t {
  unsigned char* data;
  uint64_t id;
  int src;
} fetch_t;

static int g_rank, g_nranks, g_workers = 3, g_items = 200;
static size_t g_size = 16384;
static lci_comp_t g_activation_cq, g_bulk_cq, g_release_cq;
static lci_rcomp_t g_activation_rcomp, g_release_rcomp;
static item_t* g_produced; /* this rank's items, by id */
static atomic_int g_stop_progress;

/* the byte `i` of item `id` made by rank `rank` */
static unsigned char pattern(int rank, uint64_t id, size_t i)
{
  return (unsigned char)(rank * 131 + id * 31 + i * 7);
}

static void* progress_thread(void* arg)
{
  (void)arg;
  while (!atomic_load(&g_stop_progress)) {
    lci_error_t rc = lci_progress(NULL);
    if (lci_is_fatal(rc)) die("progress", rc);
  }
  return NULL;
}

static void* worker_thread(void* arg)
{
  const int w = (int)(intptr_t)arg;
  const int target = (g_rank + 1) % g_nranks;
  for (int k = 0; k < g_items; ++k) {
    const uint64_t id = (uint64_t)w * (uint64_t)g_items + (uint64_t)k;
    item_t* item = &g_produced[id];
    item->data = (unsigned char*)malloc(g_size);
    for (size_t i = 0; i < g_size; ++i) item->data[i] = pattern(g_rank, id, i);
    lci_error_t rc = lci_register_memory(item->data, g_size, NULL, &item->mr);
    if (rc != LCI_DONE) die("register_memory", rc);
    activation_t act;
    act.id = id;
    act.size = g_size;
    if ((rc = lci_get_rmr(item->mr, &act.rmr)) != LCI_DONE) die("get_rmr", rc);
    /* LCI_COMP_NULL_RETRY: done or retry; the progress thread makes the
     * room a retry waits for */
    do {
      rc = lci_post_am(target, &act, sizeof(act), LCI_COMP_NULL_RETRY,
                       g_activation_rcomp, NULL, NULL);
      if (lci_is_retry(rc)) sched_yield();
    } while (lci_is_retry(rc));
    if (rc != LCI_DONE) die("post_am", rc);
  }
  return NULL;
}

/* The communication thread: returns when every item of this rank was
 * released and every item of the previous rank arrived. */
static int communication_thread(void)
{
  const long expected = (long)g_workers * g_items;
  long received = 0, released = 0, bad = 0;
  const lci_allocator_t* allocator;
  lci_get_allocator(NULL, &allocator);
  while (received < expected || released < expected) {
    int worked = 0;
    lci_status_t s;
    lci_error_t rc;
    /* up to five activations: start the get of each */
    for (int n = 0; n < 5 && lci_cq_pop(g_activation_cq, &s) == LCI_DONE; ++n) {
      worked = 1;
      activation_t act;
      memcpy(&act, s.buffer, sizeof(act));
      allocator->deallocate(s.buffer, allocator->context);
      fetch_t* f = (fetch_t*)malloc(sizeof(fetch_t));
      f->data = (unsigned char*)malloc(act.size);
      f->id = act.id;
      f->src = s.rank;
      lci_post_get_args_t ga = LCI_POST_GET_ARGS_INIT;
      ga.remote_comp = g_release_rcomp; /* the owner learns it was read */
      ga.tag = act.id;
      ga.user_context = f;
      do {
        rc = lci_post_get(f->src, f->data, act.size, g_bulk_cq, 0, act.rmr, &ga,
                          &s);
        if (lci_is_retry(rc)) sched_yield();
      } while (lci_is_retry(rc));
      if (lci_is_fatal(rc)) die("post_get", rc);
      if (lci_is_done(rc)) lci_comp_signal(g_bulk_cq, s);
    }
    /* every completed get: check the bytes */
    while (lci_cq_pop(g_bulk_cq, &s) == LCI_DONE) {
      worked = 1;
      fetch_t* f = (fetch_t*)s.user_context;
      for (size_t i = 0; i < g_size; ++i)
        if (f->data[i] != pattern(f->src, f->id, i)) {
          fprintf(stderr, "rank %d: item %llu of rank %d: byte %zu differs\n",
                  g_rank, (unsigned long long)f->id, f->src, i);
          ++bad;
          break;
        }
      free(f->data);
      free(f);
      ++received;
    }
    /* every release: the consumer read the item */
    while (lci_cq_pop(g_release_cq, &s) == LCI_DONE) {
      worked = 1;
      if (s.tag >= (uint64_t)expected) {
        fprintf(stderr, "rank %d: release of unknown item %llu\n", g_rank,
                (unsigned long long)s.tag);
        return 1;
      }
      item_t* item = &g_produced[s.tag];
      if ((rc = lci_deregister_memory(&item->mr, NULL)) != LCI_DONE)
        die("deregister_memory", rc);
      free(item->data);
      item->data = NULL;
      ++released;
    }
    if (!worked) sched_yield();
  }
  printf("rank %d: %ld items received from rank %d, %ld released\n", g_rank,
         received, (g_rank + g_nranks - 1) % g_nranks, released);
  return bad != 0;
}

int main(int argc, char** argv)
{
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--workers") == 0)
      g_workers = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--items") == 0)
      g_items = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--size") == 0)
      g_size = (size_t)atol(argv[i + 1]);
  }
  if (g_workers < 1 || g_items < 1 || g_size < 1) {
    fprintf(stderr,
            "usage: parsec_pattern_c [--workers W] [--items K] "
            "[--size BYTES]\n");
    return 2;
  }
  lci_error_t rc;
  if ((rc = lci_g_runtime_init(NULL, NULL)) != LCI_DONE) die("g_runtime_init", rc);
  lci_get_rank_me(NULL, &g_rank);
  lci_get_rank_n(NULL, &g_nranks);
  /* the queues; the two remote ones are registered in the same order on
   * every rank, so their handles agree */
  if ((rc = lci_alloc_cq(NULL, &g_activation_cq)) != LCI_DONE ||
      (rc = lci_alloc_cq(NULL, &g_bulk_cq)) != LCI_DONE ||
      (rc = lci_alloc_cq(NULL, &g_release_cq)) != LCI_DONE)
    die("alloc_cq", rc);
  if ((rc = lci_register_rcomp(g_activation_cq, NULL, &g_activation_rcomp)) !=
          LCI_DONE ||
      (rc = lci_register_rcomp(g_release_cq, NULL, &g_release_rcomp)) !=
          LCI_DONE)
    die("register_rcomp", rc);
  g_produced =
      (item_t*)calloc((size_t)g_workers * (size_t)g_items, sizeof(item_t));
  lci_barrier(NULL);

  pthread_t progress,
      *workers = (pthread_t*)malloc(sizeof(pthread_t) * (size_t)g_workers);
  atomic_store(&g_stop_progress, 0);
  pthread_create(&progress, NULL, progress_thread, NULL);
  for (int w = 0; w < g_workers; ++w)
    pthread_create(&workers[w], NULL, worker_thread, (void*)(intptr_t)w);
  /* this thread is the communication thread */
  const int bad = communication_thread();
  for (int w = 0; w < g_workers; ++w) pthread_join(workers[w], NULL);
  /* every rank is done before the progress thread stops (a peer may still
   * read from this rank until then); the barrier makes progress itself */
  lci_barrier(NULL);
  atomic_store(&g_stop_progress, 1);
  pthread_join(progress, NULL);

  lci_deregister_rcomp(g_release_rcomp, NULL);
  lci_deregister_rcomp(g_activation_rcomp, NULL);
  lci_free_comp(&g_release_cq);
  lci_free_comp(&g_bulk_cq);
  lci_free_comp(&g_activation_cq);
  free(workers);
  free(g_produced);
  if ((rc = lci_g_runtime_fina()) != LCI_DONE) die("g_runtime_fina", rc);
  return bad;
}
