/* The C interface (lci.h), compiled as C99: every operation of
 * src/api/spec.py, one rank talking to itself, with the error paths (a bad
 * rank, a size over the limit, a freed handle, a null function). A tiny
 * harness: CHECK counts, the last line is "N passed, N failed" and the exit
 * status is 1 when a check failed. check_capi.py (c.spec_coverage) fails
 * when an operation of the spec is never called here, or never fails here
 * inside a CHECK_FAILS. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <lci.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_passed;
static int g_failed;

#define CHECK(cond) check((cond) ? 1 : 0, #cond, __FILE__, __LINE__)
static void check(int ok, const char* what, const char* file, int line)
{
  if (ok) {
    ++g_passed;
  } else {
    ++g_failed;
    fprintf(stderr, "%s:%d: check failed: %s (last error: '%s')\n", file, line,
            what, lci_error_string());
  }
}

/* the call returned LCI_FATAL and the last error names `call` (and `what`
 * when not NULL) */
#define CHECK_FAILS(rc, call, what) \
  check_fails((rc), (call), (what), __FILE__, __LINE__)
static void check_fails(lci_error_t rc, const char* call, const char* what,
                        const char* file, int line)
{
  const char* msg = lci_error_string();
  int ok = rc == LCI_FATAL && strstr(msg, call) != NULL &&
           (what == NULL || strstr(msg, what) != NULL);
  if (ok) {
    ++g_passed;
  } else {
    ++g_failed;
    fprintf(stderr,
            "%s:%d: expected LCI_FATAL naming '%s'%s%s, got %s with '%s'\n",
            file, line, call, what ? " and " : "", what ? what : "",
            lci_get_errorcode_str(rc), msg);
  }
}

/* post until the call is not retry (progress in between) */
#define POST(expr)                            \
  do {                                        \
    rc = (expr);                              \
    if (lci_is_retry(rc)) lci_progress(NULL); \
  } while (lci_is_retry(rc))

static void test_error_codes(void)
{
  CHECK(lci_is_done(LCI_DONE) && lci_is_done(LCI_DONE_BACKLOG));
  CHECK(lci_is_posted(LCI_POSTED) && !lci_is_posted(LCI_DONE));
  CHECK(lci_is_retry(LCI_RETRY_NOPACKET) && !lci_is_retry(LCI_FATAL));
  CHECK(lci_is_fatal(LCI_FATAL) && lci_is_fatal(LCI_FATAL_PEER_FAILURE));
  CHECK(strcmp(lci_get_errorcode_str(LCI_RETRY_NOPACKET), "retry_nopacket") ==
        0);
  CHECK(strcmp(lci_error_string(), "") == 0);
}

static void test_runtime(void)
{
  lci_runtime_t g = NULL;
  CHECK(lci_get_g_runtime(&g) == LCI_DONE && g != NULL);
  int me = -1, n = -1;
  CHECK(lci_get_rank_me(NULL, &me) == LCI_DONE && me == 0);
  CHECK(lci_get_rank_n(NULL, &n) == LCI_DONE && n == 1);
  bool failed = true;
  CHECK(lci_is_peer_failed(0, NULL, &failed) == LCI_DONE && !failed);
  CHECK_FAILS(lci_is_peer_failed(1, NULL, &failed), "lci_is_peer_failed",
              "out of range");
  uint64_t max_tag = 0;
  CHECK(lci_runtime_get_attr_max_tag(g, &max_tag) == LCI_DONE &&
        max_tag == UINT64_C(0xfffffffffffffffe));
  const char* backend = NULL;
  CHECK(lci_runtime_get_attr_backend(g, &backend) == LCI_DONE &&
        backend != NULL && backend[0] != '\0');

  /* a second runtime, with attributes set through the args struct */
  lci_alloc_runtime_args_t a = LCI_ALLOC_RUNTIME_ARGS_INIT;
  a.packet_size = 4096;
  a.npackets = 128;
  a.rdv_protocol = "get";
  lci_runtime_t rt = NULL;
  CHECK(lci_alloc_runtime(&a, &rt) == LCI_DONE && rt != NULL);
  size_t packet_size = 0;
  CHECK(lci_runtime_get_attr_packet_size(rt, &packet_size) == LCI_DONE &&
        packet_size == 4096);
  const char* rdv = NULL;
  CHECK(lci_runtime_get_attr_rdv_protocol(rt, &rdv) == LCI_DONE &&
        strcmp(rdv, "get") == 0);
  bool flag = false;
  CHECK(lci_runtime_get_attr_alloc_default_device(rt, &flag) == LCI_DONE &&
        flag);
  lci_get_rank_me_args_t ra = LCI_GET_RANK_ME_ARGS_INIT;
  ra.runtime = rt;
  CHECK(lci_get_rank_me(&ra, &me) == LCI_DONE && me == 0);
  lci_runtime_t copy = rt;
  CHECK(lci_free_runtime(&rt) == LCI_DONE && rt == NULL);
  /* a freed handle */
  CHECK_FAILS(lci_free_runtime(&copy), "lci_free_runtime", NULL);
  ra.runtime = copy;
  CHECK_FAILS(lci_get_rank_me(&ra, &me), "lci_get_rank_me", NULL);
  CHECK_FAILS(lci_free_runtime(NULL), "lci_free_runtime", NULL);

  /* a bad attribute value */
  lci_alloc_runtime_args_t bad = LCI_ALLOC_RUNTIME_ARGS_INIT;
  bad.backend = "carrier-pigeon";
  CHECK_FAILS(lci_alloc_runtime(&bad, &rt), "lci_alloc_runtime",
              "carrier-pigeon");
  CHECK(rt == NULL);
}

static void test_device_and_pool(void)
{
  lci_device_t def = NULL;
  CHECK(lci_get_default_device(NULL, &def) == LCI_DONE && def != NULL);
  lci_alloc_device_args_t da = LCI_ALLOC_DEVICE_ARGS_INIT;
  da.net_max_sends = 64;
  lci_device_t dev = NULL;
  CHECK(lci_alloc_device(&da, &dev) == LCI_DONE && dev != NULL && dev != def);
  size_t sends = 0;
  CHECK(lci_device_get_attr_net_max_sends(dev, &sends) == LCI_DONE &&
        sends == 64);
  CHECK(!lci_is_fatal(lci_progress(NULL)));
  lci_progress_args_t pa = LCI_PROGRESS_ARGS_INIT;
  pa.device = dev;
  CHECK(!lci_is_fatal(lci_progress(&pa)));
  lci_device_t copy = dev;
  CHECK(lci_free_device(&dev, NULL) == LCI_DONE && dev == NULL);
  pa.device = copy;
  CHECK_FAILS(lci_progress(&pa), "lci_progress", NULL);

  lci_packet_pool_t defpool = NULL;
  CHECK(lci_get_default_packet_pool(NULL, &defpool) == LCI_DONE && defpool);
  lci_alloc_packet_pool_args_t ppa = LCI_ALLOC_PACKET_POOL_ARGS_INIT;
  ppa.packet_size = 1024;
  ppa.npackets = 16;
  lci_packet_pool_t pool = NULL;
  CHECK(lci_alloc_packet_pool(&ppa, &pool) == LCI_DONE && pool != NULL);
  size_t npackets = 0;
  CHECK(lci_packet_pool_get_attr_npackets(pool, &npackets) == LCI_DONE &&
        npackets == 16);
  lci_get_max_bcopy_size_args_t ba = LCI_GET_MAX_BCOPY_SIZE_ARGS_INIT;
  ba.packet_pool = pool;
  size_t small = 0, big = 0;
  CHECK(lci_get_max_bcopy_size(&ba, &small) == LCI_DONE && small > 0 &&
        small < 1024);
  CHECK(lci_get_max_bcopy_size(NULL, &big) == LCI_DONE && big > small);

  /* user packets: get, put back; a post of more than a packet holds */
  lci_get_upacket_args_t ua = LCI_GET_UPACKET_ARGS_INIT;
  ua.packet_pool = pool;
  void* pkt = NULL;
  CHECK(lci_get_upacket(&ua, &pkt) == LCI_DONE && pkt != NULL);
  CHECK(lci_put_upacket(pkt, NULL) == LCI_DONE);
  CHECK(lci_get_upacket(NULL, &pkt) == LCI_DONE && pkt != NULL);
  /* a size over the limit: more than the user packet holds */
  lci_status_t st;
  CHECK_FAILS(lci_post_send(0, pkt, big + 1, 1, LCI_COMP_NULL_RETRY, NULL, &st),
              "lci_post_send", "exceeds the payload of the user packet");
  CHECK(lci_put_upacket(pkt, NULL) == LCI_DONE);

  /* registration with a device (upstream LCI 2's): once out, twice refused */
  lci_device_t regdev = NULL;
  CHECK(lci_get_default_device(NULL, &regdev) == LCI_DONE && regdev);
  CHECK(lci_register_packet_pool(pool, regdev, NULL) == LCI_DONE);
  CHECK_FAILS(lci_register_packet_pool(NULL, regdev, NULL),
              "register_packet_pool", "empty handle");
  CHECK(lci_deregister_packet_pool(pool, regdev, NULL) == LCI_DONE);
  CHECK_FAILS(lci_deregister_packet_pool(pool, regdev, NULL),
              "deregister_packet_pool", "not registered");

  lci_packet_pool_t pcopy = pool;
  CHECK(lci_free_packet_pool(&pool, NULL) == LCI_DONE && pool == NULL);
  CHECK_FAILS(lci_free_packet_pool(&pcopy, NULL), "lci_free_packet_pool", NULL);
}

static lci_matching_entry_key_t my_key(int rank, lci_tag_t tag,
                                       lci_matching_policy_t policy)
{
  (void)rank;
  (void)policy;
  return tag ^ UINT64_C(0x8000000000000000);
}

static void test_matching_engine(void)
{
  lci_matching_engine_t def = NULL;
  CHECK(lci_get_default_matching_engine(NULL, &def) == LCI_DONE && def);
  lci_alloc_matching_engine_args_t a = LCI_ALLOC_MATCHING_ENGINE_ARGS_INIT;
  a.num_buckets = 16;
  a.make_key = my_key;
  lci_matching_engine_t me = NULL;
  CHECK(lci_alloc_matching_engine(&a, &me) == LCI_DONE && me != NULL);
  size_t buckets = 0;
  CHECK(lci_matching_engine_get_attr_num_buckets(me, &buckets) == LCI_DONE &&
        buckets == 16);
  int value = 7;
  lci_matching_entry_val_t got = &got;
  CHECK(lci_matching_engine_insert(me, 42, &value, LCI_MATCHING_ENTRY_TYPE_SEND,
                                   NULL, &got) == LCI_DONE &&
        got == NULL);
  /* the receive matches the send (nothing stays in the engine) */
  int other = 8;
  CHECK(lci_matching_engine_insert(me, 42, &other, LCI_MATCHING_ENTRY_TYPE_RECV,
                                   NULL, &got) == LCI_DONE &&
        got == &value);
  CHECK_FAILS(lci_matching_engine_insert(
                  me, 42, NULL, LCI_MATCHING_ENTRY_TYPE_RECV, NULL, &got),
              "lci_matching_engine_insert", "null value");
  lci_matching_engine_t copy = me;
  CHECK(lci_free_matching_engine(&me, NULL) == LCI_DONE && me == NULL);
  CHECK_FAILS(lci_matching_engine_insert(
                  copy, 1, &value, LCI_MATCHING_ENTRY_TYPE_SEND, NULL, &got),
              "lci_matching_engine_insert", "matching engine");
}

struct handler_log {
  int calls;
  lci_status_t last;
};

static void on_signal(lci_status_t status, void* context)
{
  struct handler_log* log = (struct handler_log*)context;
  ++log->calls;
  log->last = status;
}

static void test_completion_objects(void)
{
  lci_status_t s = LCI_STATUS_INIT(LCI_DONE);
  s.rank = 0;
  s.tag = 9;

  /* synchronizer with threshold 2 */
  lci_alloc_sync_args_t sa = LCI_ALLOC_SYNC_ARGS_INIT;
  sa.threshold = 2;
  lci_comp_t sync = NULL;
  CHECK(lci_alloc_sync(&sa, &sync) == LCI_DONE && sync != NULL);
  lci_status_t two[2];
  bool ready = true;
  CHECK(lci_sync_test(sync, two, &ready) == LCI_DONE && !ready);
  CHECK(lci_comp_signal(sync, s) == LCI_DONE);
  s.tag = 10;
  CHECK(lci_comp_signal(sync, s) == LCI_DONE);
  CHECK(lci_sync_test(sync, two, &ready) == LCI_DONE && ready);
  CHECK(two[0].tag + two[1].tag == 19 && two[0].error == LCI_DONE);
  CHECK(lci_comp_signal(sync, s) == LCI_DONE);
  CHECK(lci_comp_signal(sync, s) == LCI_DONE);
  lci_sync_wait_args_t wa = LCI_SYNC_WAIT_ARGS_INIT;
  wa.do_progress = false;
  CHECK(lci_sync_wait(sync, NULL, &wa) == LCI_DONE);
  lci_comp_t copy = sync;
  CHECK(lci_free_comp(&sync) == LCI_DONE && sync == NULL);
  /* a freed handle */
  CHECK_FAILS(lci_sync_test(copy, NULL, &ready), "lci_sync_test", NULL);
  CHECK_FAILS(lci_free_comp(&copy), "lci_free_comp", NULL);
  /* a bad attribute value */
  sa.threshold = 0;
  CHECK_FAILS(lci_alloc_sync(&sa, &sync), "lci_alloc_sync", "threshold");

  /* completion queue */
  lci_alloc_cq_args_t ca = LCI_ALLOC_CQ_ARGS_INIT;
  ca.cq_type = "array";
  ca.default_length = 4;
  lci_comp_t cq = NULL;
  CHECK(lci_alloc_cq(&ca, &cq) == LCI_DONE && cq != NULL);
  lci_status_t out;
  CHECK(lci_cq_pop(cq, &out) == LCI_RETRY && out.error == LCI_RETRY);
  s.user_context = &out;
  CHECK(lci_comp_signal(cq, s) == LCI_DONE);
  CHECK(lci_cq_pop(cq, &out) == LCI_DONE && out.tag == 10 &&
        out.user_context == &out);
  CHECK(lci_free_comp(&cq) == LCI_DONE);
  CHECK_FAILS(lci_cq_pop(cq, &out), "lci_cq_pop", NULL);

  /* handler with a context */
  struct handler_log log = {0, LCI_STATUS_INIT(LCI_RETRY)};
  lci_comp_t h = NULL;
  CHECK(lci_alloc_handler(on_signal, &log, NULL, &h) == LCI_DONE && h);
  CHECK(lci_comp_signal(h, s) == LCI_DONE);
  CHECK(log.calls == 1 && log.last.tag == 10 && log.last.error == LCI_DONE);
  CHECK(lci_free_comp(&h) == LCI_DONE && h == NULL);
  CHECK_FAILS(lci_alloc_handler(NULL, &log, NULL, &h), "lci_alloc_handler",
              "null handler");

  /* counter */
  lci_comp_t counter = NULL;
  CHECK(lci_alloc_counter(NULL, &counter) == LCI_DONE && counter);
  CHECK(lci_counter_set(counter, 5) == LCI_DONE);
  CHECK(lci_comp_signal(counter, s) == LCI_DONE);
  int64_t v = 0;
  CHECK(lci_counter_get(counter, &v) == LCI_DONE && v == 6);
  /* a counter is not a synchronizer */
  CHECK_FAILS(lci_sync_test(counter, NULL, &ready), "lci_sync_test",
              "not a synchronizer");
  CHECK(lci_free_comp(&counter) == LCI_DONE);
  CHECK_FAILS(lci_comp_signal(LCI_COMP_NULL, s), "lci_comp_signal", NULL);
}

/* graph callbacks: each node appends its letter to a trace */
static char g_trace[16];
static size_t g_trace_n;
static int g_edges;
static int g_freed;

static lci_status_t node_run(void* value)
{
  g_trace[g_trace_n++] = *(const char*)value;
  lci_status_t s = LCI_STATUS_INIT(LCI_DONE);
  return s;
}

static lci_status_t node_posted(void* value)
{
  g_trace[g_trace_n++] = *(const char*)value;
  lci_status_t s = LCI_STATUS_INIT(LCI_POSTED);
  return s;
}

static void edge_run(lci_status_t status, void* src, void* dst)
{
  if (status.error == LCI_DONE && *(const char*)src == 'a' &&
      *(const char*)dst == 'b')
    ++g_edges;
}

static void node_free(void* value)
{
  (void)value;
  ++g_freed;
}

static void test_graph(void)
{
  static char a = 'a', b = 'b', c = 'c';
  lci_comp_t done_sync = NULL;
  CHECK(lci_alloc_sync(NULL, &done_sync) == LCI_DONE);
  lci_alloc_graph_args_t ga = LCI_ALLOC_GRAPH_ARGS_INIT;
  ga.comp = done_sync;
  lci_comp_t graph = NULL;
  CHECK(lci_alloc_graph(&ga, &graph) == LCI_DONE && graph != NULL);
  lci_graph_add_node_args_t na = LCI_GRAPH_ADD_NODE_ARGS_INIT;
  na.value = &a;
  na.free_cb = node_free;
  lci_graph_node_t na_node = NULL, nb_node = NULL, nc_node = NULL;
  CHECK(lci_graph_add_node(graph, node_run, &na, &na_node) == LCI_DONE);
  na.value = &b;
  CHECK(lci_graph_add_node(graph, node_run, &na, &nb_node) == LCI_DONE);
  na.value = &c;
  CHECK(lci_graph_add_node(graph, node_posted, &na, &nc_node) == LCI_DONE);
  lci_graph_add_edge_args_t ea = LCI_GRAPH_ADD_EDGE_ARGS_INIT;
  ea.fn = edge_run;
  CHECK(lci_graph_add_edge(graph, LCI_GRAPH_START, na_node, NULL) == LCI_DONE);
  CHECK(lci_graph_add_edge(graph, na_node, nb_node, &ea) == LCI_DONE);
  CHECK(lci_graph_add_edge(graph, nb_node, nc_node, NULL) == LCI_DONE);
  CHECK(lci_graph_add_edge(graph, nc_node, LCI_GRAPH_END, NULL) == LCI_DONE);
  lci_status_t st;
  CHECK(lci_graph_test(graph, &st) == LCI_RETRY);
  CHECK(lci_graph_start(graph) == LCI_DONE);
  CHECK(lci_graph_test(graph, &st) == LCI_RETRY);
  CHECK(g_trace_n == 3 && memcmp(g_trace, "abc", 3) == 0 && g_edges == 1);
  /* the posted node completes by hand */
  lci_graph_node_mark_complete_args_t ma =
      LCI_GRAPH_NODE_MARK_COMPLETE_ARGS_INIT;
  CHECK(ma.status.error == LCI_DONE);
  CHECK(lci_graph_node_mark_complete(nc_node, &ma) == LCI_DONE);
  CHECK(lci_graph_test(graph, &st) == LCI_DONE && st.error == LCI_DONE);
  bool ready = false;
  CHECK(lci_sync_test(done_sync, NULL, &ready) == LCI_DONE && ready);
  CHECK_FAILS(lci_graph_add_edge(graph, na_node, (lci_graph_node_t)&c, NULL),
              "lci_graph_add_edge", NULL);
  CHECK(lci_free_comp(&graph) == LCI_DONE);
  CHECK(g_freed == 3);
  CHECK(lci_free_comp(&done_sync) == LCI_DONE);
}

/* posting calls as graph nodes (lci_graph_add_node_<post>): each posts when
 * the graph runs it and completes when its communication does */
static void test_graph_post_nodes(void)
{
  enum { N = 256 };
  char out[64] = "a send as a graph node";
  char in[64] = {0};
  char comm_out[16] = "post_comm node";
  char comm_in[16] = {0};
  char* region = (char*)calloc(N, 1);
  char* local = (char*)malloc(N);
  char* back = (char*)calloc(N, 1);
  for (int i = 0; i < N; ++i) local[i] = (char)(i * 3 + 1);
  lci_mr_t mr = NULL;
  CHECK(lci_register_memory(region, N, NULL, &mr) == LCI_DONE);
  lci_rmr_t rmr = LCI_RMR_NULL_INIT;
  CHECK(lci_get_rmr(mr, &rmr) == LCI_DONE);
  lci_comp_t cq = NULL;
  CHECK(lci_alloc_cq(NULL, &cq) == LCI_DONE);
  lci_rcomp_t rcomp = LCI_RCOMP_NULL;
  CHECK(lci_register_rcomp(cq, NULL, &rcomp) == LCI_DONE);

  lci_comp_t graph = NULL;
  CHECK(lci_alloc_graph(NULL, &graph) == LCI_DONE);
  lci_graph_node_t recv = NULL, send = NULL, cin = NULL, cout = NULL, am = NULL,
                   put = NULL, get = NULL;
  CHECK(lci_graph_add_node_post_recv(graph, 0, in, sizeof(in), 9, NULL,
                                     &recv) == LCI_DONE &&
        recv != NULL);
  lci_post_send_args_t sa = LCI_POST_SEND_ARGS_INIT;
  sa.user_context = out; /* replaced by the node */
  CHECK(lci_graph_add_node_post_send(graph, 0, out, sizeof(out), 9, &sa,
                                     &send) == LCI_DONE);
  lci_post_comm_args_t ca = LCI_POST_COMM_ARGS_INIT;
  ca.tag = 10;
  CHECK(lci_graph_add_node_post_comm(graph, LCI_DIRECTION_IN, 0, comm_in,
                                     sizeof(comm_in), &ca, &cin) == LCI_DONE);
  CHECK(lci_graph_add_node_post_comm(graph, LCI_DIRECTION_OUT, 0, comm_out,
                                     sizeof(comm_out), &ca, &cout) == LCI_DONE);
  uint64_t payload = UINT64_C(0x0102030405060708);
  lci_post_am_args_t aa = LCI_POST_AM_ARGS_INIT;
  aa.tag = 78;
  CHECK(lci_graph_add_node_post_am(graph, 0, &payload, sizeof(payload), rcomp,
                                   &aa, &am) == LCI_DONE);
  CHECK(lci_graph_add_node_post_put(graph, 0, local, N, 0, rmr, NULL, &put) ==
        LCI_DONE);
  /* the args struct is copied: changing it afterwards changes nothing */
  lci_post_get_args_t ga = LCI_POST_GET_ARGS_INIT;
  ga.tag = 1;
  CHECK(lci_graph_add_node_post_get(graph, 0, back, N - 16, 16, rmr, &ga,
                                    &get) == LCI_DONE);
  ga.remote_comp = (lci_rcomp_t)1 << 30;
  lci_graph_node_t firsts[5] = {recv, send, cin, cout, am};
  for (int i = 0; i < 5; ++i) {
    CHECK(lci_graph_add_edge(graph, LCI_GRAPH_START, firsts[i], NULL) ==
          LCI_DONE);
    CHECK(lci_graph_add_edge(graph, firsts[i], LCI_GRAPH_END, NULL) ==
          LCI_DONE);
  }
  /* the get reads what the put wrote */
  CHECK(lci_graph_add_edge(graph, LCI_GRAPH_START, put, NULL) == LCI_DONE);
  CHECK(lci_graph_add_edge(graph, put, get, NULL) == LCI_DONE);
  CHECK(lci_graph_add_edge(graph, get, LCI_GRAPH_END, NULL) == LCI_DONE);

  lci_status_t st;
  lci_error_t rc = LCI_RETRY;
  CHECK(lci_graph_start(graph) == LCI_DONE);
  for (long i = 0; i < 1000000 && rc == LCI_RETRY; ++i) {
    lci_progress(NULL);
    rc = lci_graph_test(graph, &st);
  }
  CHECK(rc == LCI_DONE);
  CHECK(strcmp(in, out) == 0 && strcmp(comm_in, comm_out) == 0);
  CHECK(memcmp(region, local, N) == 0);
  CHECK(memcmp(back, local + 16, N - 16) == 0);
  lci_status_t got;
  do {
    lci_progress(NULL);
    rc = lci_cq_pop(cq, &got);
  } while (rc == LCI_RETRY);
  CHECK(rc == LCI_DONE && got.tag == 78 && got.size == 8 &&
        memcmp(got.buffer, &payload, 8) == 0);
  if (rc == LCI_DONE) {
    const lci_allocator_t* a = NULL;
    lci_get_allocator(NULL, &a);
    a->deallocate(got.buffer, a->context);
  }

  /* error paths: not a graph, a freed graph */
  lci_graph_node_t none = NULL;
  CHECK_FAILS(lci_graph_add_node_post_send(cq, 0, out, 8, 9, NULL, &none),
              "lci_graph_add_node_post_send", "not a graph");
  CHECK(none == NULL);
  lci_comp_t gone = graph;
  CHECK(lci_free_comp(&graph) == LCI_DONE);
  CHECK_FAILS(lci_graph_add_node_post_recv(gone, 0, in, 8, 9, NULL, &none),
              "lci_graph_add_node_post_recv", NULL);
  CHECK_FAILS(
      lci_graph_add_node_post_am(gone, 0, &payload, 8, rcomp, NULL, &none),
      "lci_graph_add_node_post_am", NULL);
  CHECK_FAILS(lci_graph_add_node_post_comm(gone, LCI_DIRECTION_OUT, 0, out, 8,
                                           NULL, &none),
              "lci_graph_add_node_post_comm", NULL);
  CHECK_FAILS(
      lci_graph_add_node_post_put(gone, 0, local, 8, 0, rmr, NULL, &none),
      "lci_graph_add_node_post_put", NULL);
  CHECK_FAILS(
      lci_graph_add_node_post_get(gone, 0, back, 8, 0, rmr, NULL, &none),
      "lci_graph_add_node_post_get", NULL);
  /* a bad rank fails when the node runs: in the call that runs it */
  CHECK(lci_alloc_graph(NULL, &graph) == LCI_DONE);
  CHECK(lci_graph_add_node_post_send(graph, 3, out, 8, 9, NULL, &send) ==
        LCI_DONE);
  CHECK(lci_graph_add_edge(graph, LCI_GRAPH_START, send, NULL) == LCI_DONE);
  CHECK_FAILS(lci_graph_start(graph), "lci_graph_start",
              "rank 3 is out of range");
  CHECK(lci_free_comp(&graph) == LCI_DONE);

  CHECK(lci_deregister_rcomp(rcomp, NULL) == LCI_DONE);
  CHECK(lci_free_comp(&cq) == LCI_DONE);
  CHECK(lci_deregister_memory(&mr, NULL) == LCI_DONE);
  free(region);
  free(local);
  free(back);
}

/* an allocator that counts */
struct counting_allocator {
  int allocs;
  int frees;
};
static void* count_alloc(size_t size, void* context)
{
  ++((struct counting_allocator*)context)->allocs;
  return malloc(size);
}
static void count_free(void* ptr, void* context)
{
  ++((struct counting_allocator*)context)->frees;
  free(ptr);
}

static void test_point_to_point(void)
{
  lci_error_t rc;
  lci_status_t st;
  char out[64] = "hello from C";
  char in[64] = {0};

  /* send and receive, then the generic post_comm */
  lci_comp_t sync = NULL;
  CHECK(lci_alloc_sync(NULL, &sync) == LCI_DONE);
  POST(lci_post_recv(0, in, sizeof(in), 5, sync, NULL, &st));
  CHECK(rc == LCI_POSTED || rc == LCI_DONE);
  lci_post_send_args_t sa = LCI_POST_SEND_ARGS_INIT;
  sa.user_context = out;
  POST(lci_post_send(0, out, sizeof(out), 5, LCI_COMP_NULL, &sa, &st));
  CHECK(rc == LCI_DONE && st.user_context == out);
  lci_status_t got;
  CHECK(lci_sync_wait(sync, &got, NULL) == LCI_DONE);
  CHECK(got.rank == 0 && got.tag == 5 && got.size == sizeof(out) &&
        strcmp(in, out) == 0);

  memset(in, 0, sizeof(in));
  lci_post_comm_args_t ca = LCI_POST_COMM_ARGS_INIT;
  ca.tag = 6;
  POST(lci_post_comm(LCI_DIRECTION_IN, 0, in, sizeof(in), sync, &ca, &st));
  CHECK(!lci_is_fatal(rc));
  POST(lci_post_comm(LCI_DIRECTION_OUT, 0, out, 12, LCI_COMP_NULL, &ca, &st));
  CHECK(rc == LCI_DONE);
  CHECK(lci_sync_wait(sync, &got, NULL) == LCI_DONE && got.size == 12 &&
        memcmp(in, out, 12) == 0);

  /* lists of buffers: two pieces sent, received into three */
  {
    char p1[5] = "abcd", p2[7] = "efghij";
    char r1[3] = {0}, r2[3] = {0}, r3[16] = {0};
    lci_buffer_t outs[2] = {{p1, 4, NULL}, {p2, 6, NULL}};
    lci_buffer_t ins[3] = {{r1, 3, NULL}, {r2, 3, NULL}, {r3, 16, NULL}};
    lci_post_recv_args_t ra = LCI_POST_RECV_ARGS_INIT;
    ra.buffers = ins;
    ra.buffers_count = 3;
    POST(lci_post_recv(0, NULL, 0, 8, sync, &ra, &st));
    CHECK(rc == LCI_POSTED || rc == LCI_DONE);
    lci_post_send_args_t la = LCI_POST_SEND_ARGS_INIT;
    la.buffers = outs;
    la.buffers_count = 2;
    POST(lci_post_send(0, NULL, 0, 8, LCI_COMP_NULL, &la, &st));
    CHECK(rc == LCI_DONE && st.size == 10 && st.buffer == p1);
    CHECK(lci_sync_wait(sync, &got, NULL) == LCI_DONE && got.size == 10 &&
          got.buffer == r1 && memcmp(r1, "abc", 3) == 0 &&
          memcmp(r2, "def", 3) == 0 && memcmp(r3, "ghij", 4) == 0);
    /* a graph node copies the list: the array may change before it runs */
    lci_comp_t lg = NULL;
    lci_graph_node_t ln = NULL;
    memset(r1, 0, 3);
    memset(r2, 0, 3);
    memset(r3, 0, 16);
    POST(lci_post_recv(0, NULL, 0, 11, sync, &ra, &st));
    CHECK(rc == LCI_POSTED || rc == LCI_DONE);
    CHECK(lci_alloc_graph(NULL, &lg) == LCI_DONE);
    CHECK(lci_graph_add_node_post_send(lg, 0, NULL, 0, 11, &la, &ln) ==
          LCI_DONE);
    outs[0].base = p2;
    outs[1].size = 1;
    CHECK(lci_graph_start(lg) == LCI_DONE);
    rc = LCI_RETRY;
    for (long i = 0; i < 1000000 && rc == LCI_RETRY; ++i) {
      lci_progress(NULL);
      rc = lci_graph_test(lg, &st);
    }
    CHECK(rc == LCI_DONE);
    CHECK(lci_sync_wait(sync, &got, NULL) == LCI_DONE && got.size == 10 &&
          memcmp(r1, "abc", 3) == 0 && memcmp(r2, "def", 3) == 0 &&
          memcmp(r3, "ghij", 4) == 0);
    CHECK(lci_free_comp(&lg) == LCI_DONE);
    outs[0].base = p1;
    outs[1].size = 6;
    la.buffers = NULL;
    CHECK_FAILS(lci_post_send(0, NULL, 0, 8, LCI_COMP_NULL, &la, &st),
                "lci_post_send", "NULL buffer list with count 2");
    la.buffers = outs;
    CHECK_FAILS(lci_post_send(0, out, 8, 8, LCI_COMP_NULL, &la, &st),
                "lci_post_send", "must be nullptr and 0");
  }

  /* error paths: a bad rank, a size over the limit */
  CHECK_FAILS(lci_post_send(3, out, 8, 1, LCI_COMP_NULL, NULL, &st),
              "lci_post_send", "rank 3 is out of range");
  st.error = LCI_DONE;
  CHECK_FAILS(lci_post_send(-7, out, 8, 1, LCI_COMP_NULL, NULL, &st),
              "lci_post_send", "rank -7");
  /* a failed call's status carries its code */
  CHECK(st.error == LCI_FATAL && st.rank == -1);
  CHECK_FAILS(lci_post_send(0, out, (size_t)-1, 1, LCI_COMP_NULL, NULL, &st),
              "lci_post_send", "larger than any buffer");
  /* a freed completion queue as an active message's remote completion */
  lci_comp_t gone = NULL;
  CHECK(lci_alloc_cq(NULL, &gone) == LCI_DONE);
  lci_comp_t gone_copy = gone;
  CHECK(lci_free_comp(&gone) == LCI_DONE);
  CHECK_FAILS(lci_cq_pop(gone_copy, &st), "lci_cq_pop", NULL);

  /* an active message to a registered completion queue, its buffer from a
   * C allocator */
  struct counting_allocator counts = {0, 0};
  lci_allocator_t alloc = {count_alloc, count_free, &counts};
  CHECK(lci_set_allocator(&alloc, NULL) == LCI_DONE);
  const lci_allocator_t* in_force = NULL;
  CHECK(lci_get_allocator(NULL, &in_force) == LCI_DONE && in_force == &alloc);
  lci_comp_t cq = NULL;
  CHECK(lci_alloc_cq(NULL, &cq) == LCI_DONE);
  lci_rcomp_t rcomp = LCI_RCOMP_NULL;
  CHECK(lci_register_rcomp(cq, NULL, &rcomp) == LCI_DONE &&
        rcomp != LCI_RCOMP_NULL);
  uint64_t payload = UINT64_C(0x1122334455667788);
  lci_post_am_args_t aa = LCI_POST_AM_ARGS_INIT;
  aa.tag = 77;
  POST(lci_post_am(0, &payload, sizeof(payload), LCI_COMP_NULL, rcomp, &aa,
                   &st));
  CHECK(rc == LCI_DONE);
  do {
    lci_progress(NULL);
    rc = lci_cq_pop(cq, &got);
  } while (rc == LCI_RETRY);
  CHECK(rc == LCI_DONE && got.size == sizeof(payload) && got.tag == 77 &&
        got.buffer != NULL && memcmp(got.buffer, &payload, 8) == 0);
  CHECK(counts.allocs == 1);
  in_force->deallocate(got.buffer, in_force->context);
  CHECK(counts.frees == 1);
  /* back to the default allocator (malloc and free) */
  CHECK(lci_set_allocator(NULL, NULL) == LCI_DONE);
  CHECK(lci_get_allocator(NULL, &in_force) == LCI_DONE && in_force &&
        in_force != &alloc);
  void* p = in_force->allocate(16, in_force->context);
  CHECK(p != NULL);
  in_force->deallocate(p, in_force->context);
  lci_allocator_t half = {count_alloc, NULL, &counts};
  CHECK_FAILS(lci_set_allocator(&half, NULL), "lci_set_allocator",
              "deallocate");
  CHECK(lci_deregister_rcomp(rcomp, NULL) == LCI_DONE);
  /* a remote completion handle out of range */
  CHECK_FAILS(lci_post_am(0, &payload, 8, LCI_COMP_NULL, (lci_rcomp_t)1 << 30,
                          NULL, &st),
              "lci_post_am", "out of range");
  CHECK(lci_free_comp(&cq) == LCI_DONE);

  /* drained: nothing waits for the network now */
  CHECK(lci_wait_drained(NULL) == LCI_DONE);
  CHECK(lci_test_drained(NULL) == LCI_DONE);
  CHECK(lci_free_comp(&sync) == LCI_DONE);
}

static void test_rma(void)
{
  lci_error_t rc;
  lci_status_t st;
  enum { N = 4096 };
  char* region = (char*)calloc(N, 1);
  char* local = (char*)malloc(N);
  for (int i = 0; i < N; ++i) local[i] = (char)(i * 7);
  lci_mr_t mr = NULL;
  CHECK(lci_register_memory(region, N, NULL, &mr) == LCI_DONE && mr != NULL);
  lci_rmr_t rmr = LCI_RMR_NULL_INIT;
  CHECK(rmr.size == 0);
  CHECK(lci_get_rmr(mr, &rmr) == LCI_DONE && rmr.size == N && rmr.rank == 0);

  lci_comp_t sync = NULL;
  CHECK(lci_alloc_sync(NULL, &sync) == LCI_DONE);
  POST(lci_post_put(0, local, N, sync, 0, rmr, NULL, &st));
  CHECK(!lci_is_fatal(rc));
  if (rc == LCI_POSTED) CHECK(lci_sync_wait(sync, NULL, NULL) == LCI_DONE);
  CHECK(memcmp(region, local, N) == 0);

  /* a get with a signal to a counter at the target (here: this rank) */
  lci_comp_t counter = NULL;
  CHECK(lci_alloc_counter(NULL, &counter) == LCI_DONE);
  lci_rcomp_t rc_counter = LCI_RCOMP_NULL;
  CHECK(lci_register_rcomp(counter, NULL, &rc_counter) == LCI_DONE);
  memset(local, 0, N);
  lci_post_get_args_t ga = LCI_POST_GET_ARGS_INIT;
  ga.remote_comp = rc_counter;
  POST(lci_post_get(0, local, 100, sync, 10, rmr, &ga, &st));
  CHECK(!lci_is_fatal(rc));
  if (rc == LCI_POSTED) CHECK(lci_sync_wait(sync, NULL, NULL) == LCI_DONE);
  CHECK(memcmp(local, region + 10, 100) == 0);
  int64_t signals = 0;
  for (int i = 0; i < 100000 && signals == 0; ++i) {
    lci_progress(NULL);
    lci_counter_get(counter, &signals);
  }
  CHECK(signals == 1);

  /* a size over the limit: past the end of the region */
  CHECK_FAILS(lci_post_put(0, local, N, sync, 1, rmr, NULL, &st),
              "lci_post_put", NULL);
  CHECK_FAILS(lci_post_get(0, local, N + 1, sync, 0, rmr, NULL, &st),
              "lci_post_get", NULL);

  lci_mr_t copy = mr;
  CHECK(lci_deregister_memory(&mr, NULL) == LCI_DONE && mr == NULL);
  CHECK_FAILS(lci_get_rmr(copy, &rmr), "lci_get_rmr", NULL);
  CHECK(lci_deregister_rcomp(rc_counter, NULL) == LCI_DONE);
  CHECK(lci_free_comp(&counter) == LCI_DONE);
  CHECK(lci_free_comp(&sync) == LCI_DONE);
  free(region);
  free(local);
}

static void sum_i64(const void* left, const void* right, void* dst, size_t n)
{
  const int64_t* l = (const int64_t*)left;
  const int64_t* r = (const int64_t*)right;
  int64_t* d = (int64_t*)dst;
  for (size_t i = 0; i < n; ++i) d[i] = l[i] + r[i];
}

static void test_collectives(void)
{
  CHECK(lci_barrier(NULL) == LCI_DONE);
  /* nonblocking: signalled once when complete */
  lci_comp_t sync = NULL;
  CHECK(lci_alloc_sync(NULL, &sync) == LCI_DONE);
  lci_barrier_args_t ba = LCI_BARRIER_ARGS_INIT;
  ba.comp = sync;
  CHECK(lci_barrier(&ba) == LCI_DONE);
  CHECK(lci_sync_wait(sync, NULL, NULL) == LCI_DONE);
  CHECK(lci_free_comp(&sync) == LCI_DONE);

  int64_t x[3] = {1, 2, 3}, y[3] = {0, 0, 0};
  lci_broadcast_args_t bca = LCI_BROADCAST_ARGS_INIT;
  bca.algorithm = LCI_BROADCAST_ALGORITHM_RING;
  CHECK(lci_broadcast(x, sizeof(x), 0, &bca) == LCI_DONE && x[2] == 3);
  CHECK(lci_reduce(x, y, 3, sizeof(int64_t), sum_i64, 0, NULL) == LCI_DONE &&
        y[0] == 1 && y[2] == 3);
  memset(y, 0, sizeof(y));
  CHECK(lci_allreduce(x, y, 3, sizeof(int64_t), sum_i64, NULL) == LCI_DONE &&
        y[1] == 2);
  memset(y, 0, sizeof(y));
  CHECK(lci_reduce_scatter(x, y, 3, sizeof(int64_t), sum_i64, NULL) ==
            LCI_DONE &&
        y[2] == 3);
  memset(y, 0, sizeof(y));
  CHECK(lci_allgather(x, y, sizeof(x), NULL) == LCI_DONE && y[0] == 1);
  memset(y, 0, sizeof(y));
  CHECK(lci_alltoall(x, y, sizeof(x), NULL) == LCI_DONE && y[1] == 2);
  CHECK_FAILS(lci_broadcast(x, sizeof(x), 2, NULL), "lci_broadcast", "2");
}

/* Every operation's error path: one failing call each (check_capi.py
 * checks that every operation of the spec but get_g_runtime, which takes
 * nothing that could be bad, is the call of a CHECK_FAILS). Most take a
 * runtime that was freed; the others a freed or wrong completion object,
 * or a pointer this library never made. */
static void test_every_op_fails(void)
{
  lci_runtime_t dead = NULL;
  CHECK(lci_alloc_runtime(NULL, &dead) == LCI_DONE);
  lci_runtime_t keep = dead;
  CHECK(lci_free_runtime(&keep) == LCI_DONE);
  lci_comp_t gone = NULL;
  CHECK(lci_alloc_counter(NULL, &gone) == LCI_DONE);
  lci_comp_t keep_comp = gone;
  CHECK(lci_free_comp(&keep_comp) == LCI_DONE);
  lci_comp_t cq = NULL;
  CHECK(lci_alloc_cq(NULL, &cq) == LCI_DONE);
  char buf[64];
  int i = 0;
  size_t z = 0;
  lci_status_t st;
  lci_device_t dev = NULL;
  lci_packet_pool_t pool = NULL;
  lci_matching_engine_t me = NULL;
  lci_comp_t comp = NULL;
  lci_mr_t mr = NULL;
  lci_rcomp_t rcomp = 0;
  void* p = NULL;
  const lci_allocator_t* al = NULL;
  lci_graph_node_t node = NULL;

  {
    /* a second init keeps the runtime (a warning) and counts: each init
     * has its own fina */
    lci_runtime_t first = NULL, again = NULL;
    CHECK(lci_get_g_runtime(&first) == LCI_DONE);
    CHECK(lci_g_runtime_init(NULL, &again) == LCI_DONE && again == first);
    CHECK(lci_g_runtime_fina() == LCI_DONE);
  }
  lci_get_rank_n_args_t rn = LCI_GET_RANK_N_ARGS_INIT;
  rn.runtime = dead;
  CHECK_FAILS(lci_get_rank_n(&rn, &i), "lci_get_rank_n", NULL);

  lci_alloc_device_args_t ad = LCI_ALLOC_DEVICE_ARGS_INIT;
  ad.runtime = dead;
  CHECK_FAILS(lci_alloc_device(&ad, &dev), "lci_alloc_device", NULL);
  lci_device_t fake_dev = (lci_device_t)buf;
  CHECK_FAILS(lci_free_device(&fake_dev, NULL), "lci_free_device", NULL);
  lci_get_default_device_args_t gd = LCI_GET_DEFAULT_DEVICE_ARGS_INIT;
  gd.runtime = dead;
  CHECK_FAILS(lci_get_default_device(&gd, &dev), "lci_get_default_device",
              NULL);
  lci_alloc_packet_pool_args_t ap = LCI_ALLOC_PACKET_POOL_ARGS_INIT;
  ap.runtime = dead;
  CHECK_FAILS(lci_alloc_packet_pool(&ap, &pool), "lci_alloc_packet_pool", NULL);
  lci_get_default_packet_pool_args_t gp = LCI_GET_DEFAULT_PACKET_POOL_ARGS_INIT;
  gp.runtime = dead;
  CHECK_FAILS(lci_get_default_packet_pool(&gp, &pool),
              "lci_get_default_packet_pool", NULL);
  lci_get_allocator_args_t ga = LCI_GET_ALLOCATOR_ARGS_INIT;
  ga.runtime = dead;
  CHECK_FAILS(lci_get_allocator(&ga, &al), "lci_get_allocator", NULL);
  lci_get_upacket_args_t gu = LCI_GET_UPACKET_ARGS_INIT;
  gu.runtime = dead;
  CHECK_FAILS(lci_get_upacket(&gu, &p), "lci_get_upacket", NULL);
  CHECK_FAILS(lci_put_upacket(buf, NULL), "lci_put_upacket",
              "not a packet from get_upacket");
  lci_get_max_bcopy_size_args_t gb = LCI_GET_MAX_BCOPY_SIZE_ARGS_INIT;
  gb.runtime = dead;
  CHECK_FAILS(lci_get_max_bcopy_size(&gb, &z), "lci_get_max_bcopy_size", NULL);
  lci_alloc_matching_engine_args_t am = LCI_ALLOC_MATCHING_ENGINE_ARGS_INIT;
  am.runtime = dead;
  CHECK_FAILS(lci_alloc_matching_engine(&am, &me), "lci_alloc_matching_engine",
              NULL);
  lci_matching_engine_t fake_me = (lci_matching_engine_t)buf;
  CHECK_FAILS(lci_free_matching_engine(&fake_me, NULL),
              "lci_free_matching_engine", NULL);
  lci_get_default_matching_engine_args_t gm =
      LCI_GET_DEFAULT_MATCHING_ENGINE_ARGS_INIT;
  gm.runtime = dead;
  CHECK_FAILS(lci_get_default_matching_engine(&gm, &me),
              "lci_get_default_matching_engine", NULL);

  CHECK_FAILS(lci_sync_wait(gone, NULL, NULL), "lci_sync_wait", NULL);
  lci_alloc_cq_args_t ac = LCI_ALLOC_CQ_ARGS_INIT;
  ac.cq_type = "stack";
  CHECK_FAILS(lci_alloc_cq(&ac, &comp), "lci_alloc_cq", "stack");
  lci_alloc_counter_args_t ak = LCI_ALLOC_COUNTER_ARGS_INIT;
  ak.runtime = dead;
  CHECK_FAILS(lci_alloc_counter(&ak, &comp), "lci_alloc_counter", NULL);
  int64_t v = 0;
  CHECK_FAILS(lci_counter_get(gone, &v), "lci_counter_get", NULL);
  CHECK_FAILS(lci_counter_set(cq, 1), "lci_counter_set", "not a counter");
  lci_alloc_graph_args_t ag = LCI_ALLOC_GRAPH_ARGS_INIT;
  ag.comp = LCI_COMP_NULL_RETRY;
  CHECK_FAILS(lci_alloc_graph(&ag, &comp), "lci_alloc_graph",
              "COMP_NULL_RETRY");
  CHECK_FAILS(lci_graph_add_node(cq, node_run, NULL, &node),
              "lci_graph_add_node", "not a graph");
  CHECK_FAILS(lci_graph_node_mark_complete((lci_graph_node_t)buf, NULL),
              "lci_graph_node_mark_complete", NULL);
  CHECK_FAILS(lci_graph_start(cq), "lci_graph_start", "not a graph");
  CHECK_FAILS(lci_graph_test(gone, &st), "lci_graph_test", NULL);
  CHECK(st.error == LCI_FATAL);
  CHECK_FAILS(lci_register_rcomp(LCI_COMP_NULL, NULL, &rcomp),
              "lci_register_rcomp", "empty");
  CHECK_FAILS(lci_deregister_rcomp(4000, NULL), "lci_deregister_rcomp", NULL);

  lci_register_memory_args_t rm = LCI_REGISTER_MEMORY_ARGS_INIT;
  rm.runtime = dead;
  CHECK_FAILS(lci_register_memory(buf, sizeof(buf), &rm, &mr),
              "lci_register_memory", NULL);
  lci_mr_t fake_mr = (lci_mr_t)buf;
  CHECK_FAILS(lci_deregister_memory(&fake_mr, NULL), "lci_deregister_memory",
              NULL);

  CHECK_FAILS(lci_post_comm(LCI_DIRECTION_IN, 5, buf, 8, cq, NULL, &st),
              "lci_post_comm", "rank 5");
  CHECK_FAILS(lci_post_recv(0, NULL, 8, 1, cq, NULL, &st), "lci_post_recv",
              "null buffer");
  lci_barrier_args_t ba = LCI_BARRIER_ARGS_INIT;
  ba.runtime = dead;
  CHECK_FAILS(lci_barrier(&ba), "lci_barrier", NULL);
  CHECK_FAILS(lci_reduce(buf, buf, 1, 8, NULL, 0, NULL), "lci_reduce", NULL);
  CHECK_FAILS(lci_allreduce(buf, buf, 1, 8, NULL, NULL), "lci_allreduce", NULL);
  CHECK_FAILS(lci_reduce_scatter(buf, buf, 1, 8, NULL, NULL),
              "lci_reduce_scatter", NULL);
  lci_allgather_args_t al_args = LCI_ALLGATHER_ARGS_INIT;
  al_args.runtime = dead;
  CHECK_FAILS(lci_allgather(buf, buf, 8, &al_args), "lci_allgather", NULL);
  lci_alltoall_args_t aa = LCI_ALLTOALL_ARGS_INIT;
  aa.runtime = dead;
  CHECK_FAILS(lci_alltoall(buf, buf, 8, &aa), "lci_alltoall", NULL);
  lci_test_drained_args_t td = LCI_TEST_DRAINED_ARGS_INIT;
  td.runtime = dead;
  CHECK_FAILS(lci_test_drained(&td), "lci_test_drained", NULL);
  lci_wait_drained_args_t wd = LCI_WAIT_DRAINED_ARGS_INIT;
  wd.runtime = dead;
  CHECK_FAILS(lci_wait_drained(&wd), "lci_wait_drained", NULL);

  CHECK(lci_free_comp(&cq) == LCI_DONE);
  /* the library still works */
  CHECK(lci_barrier(NULL) == LCI_DONE);
}

/* a failure on another thread: its own message, not this thread's */
static int g_other_thread_ok;
static void* fail_elsewhere(void* arg)
{
  int me = 0;
  lci_get_rank_me_args_t a = LCI_GET_RANK_ME_ARGS_INIT;
  a.runtime = (lci_runtime_t)arg; /* a freed runtime */
  lci_error_t rc = lci_get_rank_me(&a, &me);
  g_other_thread_ok =
      rc == LCI_FATAL && strstr(lci_error_string(), "lci_get_rank_me");
  return NULL;
}

static void test_thread_local_error(void)
{
  lci_runtime_t rt = NULL;
  CHECK(lci_alloc_runtime(NULL, &rt) == LCI_DONE);
  lci_runtime_t freed = rt;
  CHECK(lci_free_runtime(&rt) == LCI_DONE);
  lci_status_t st;
  CHECK_FAILS(lci_post_send(9, NULL, 0, 1, LCI_COMP_NULL, NULL, &st),
              "lci_post_send", "rank 9");
  pthread_t t;
  CHECK(pthread_create(&t, NULL, fail_elsewhere, freed) == 0);
  CHECK(pthread_join(t, NULL) == 0 && g_other_thread_ok);
  /* this thread's message is still its own */
  CHECK(strstr(lci_error_string(), "rank 9") != NULL);
}

/* upstream LCI 2's global defaults, network contexts and endpoints */
static void test_upstream_handles(void)
{
  CHECK(lci_global_initialize() == LCI_DONE);
  CHECK(lci_global_finalize() == LCI_DONE);
  CHECK_FAILS(lci_global_finalize(), "lci_global_finalize",
              "no global_initialize");

  lci_net_context_t def = NULL, def2 = NULL, ctx = NULL;
  CHECK(lci_get_default_net_context(NULL, &def) == LCI_DONE && def != NULL);
  CHECK(lci_get_default_net_context(NULL, &def2) == LCI_DONE && def2 == def);
  CHECK(lci_alloc_net_context(NULL, &ctx) == LCI_DONE && ctx && ctx != def);
  lci_alloc_device_args_t da = LCI_ALLOC_DEVICE_ARGS_INIT;
  da.net_context = ctx;
  lci_device_t dev = NULL;
  CHECK(lci_alloc_device(&da, &dev) == LCI_DONE && dev != NULL);
  CHECK_FAILS(lci_free_net_context(&def, NULL), "lci_free_net_context",
              "default");
  lci_net_context_t ctx_copy = ctx;
  CHECK(lci_free_net_context(&ctx, NULL) == LCI_DONE && ctx == NULL);
  CHECK_FAILS(lci_free_net_context(&ctx_copy, NULL), "lci_free_net_context",
              NULL);
  da.net_context = ctx_copy;
  lci_device_t dev2 = NULL;
  CHECK_FAILS(lci_alloc_device(&da, &dev2), "lci_alloc_device", NULL);
  lci_alloc_net_context_args_t na = LCI_ALLOC_NET_CONTEXT_ARGS_INIT;
  na.runtime = (lci_runtime_t)&na;
  CHECK_FAILS(lci_alloc_net_context(&na, &ctx), "lci_alloc_net_context", NULL);
  lci_get_default_net_context_args_t ga = LCI_GET_DEFAULT_NET_CONTEXT_ARGS_INIT;
  ga.runtime = (lci_runtime_t)&ga;
  CHECK_FAILS(lci_get_default_net_context(&ga, &ctx),
              "lci_get_default_net_context", NULL);

  /* an endpoint of dev: a send through it goes out on dev */
  lci_alloc_endpoint_args_t ea = LCI_ALLOC_ENDPOINT_ARGS_INIT;
  ea.device = dev;
  lci_endpoint_t ep = NULL, defep = NULL;
  CHECK(lci_alloc_endpoint(&ea, &ep) == LCI_DONE && ep != NULL);
  lci_get_default_endpoint_args_t dea = LCI_GET_DEFAULT_ENDPOINT_ARGS_INIT;
  dea.device = dev;
  CHECK(lci_get_default_endpoint(&dea, &defep) == LCI_DONE && defep &&
        defep != ep);
  lci_comp_t cq = NULL;
  CHECK(lci_alloc_cq(NULL, &cq) == LCI_DONE);
  lci_post_recv_args_t ra = LCI_POST_RECV_ARGS_INIT;
  ra.device = dev;
  lci_post_send_args_t sa = LCI_POST_SEND_ARGS_INIT;
  sa.endpoint = ep;
  char in[8] = {0}, out[8] = "endpnt";
  lci_status_t st;
  int got = 0; /* the receive and the send, done at once or through cq */
  lci_error_t rc = lci_post_recv(0, in, sizeof(in), 9, cq, &ra, &st);
  CHECK(rc == LCI_DONE || rc == LCI_POSTED);
  got += rc == LCI_DONE;
  rc = lci_post_send(0, out, sizeof(out), 9, cq, &sa, &st);
  CHECK(rc == LCI_DONE || rc == LCI_POSTED);
  got += rc == LCI_DONE;
  lci_progress_args_t pa = LCI_PROGRESS_ARGS_INIT;
  pa.device = dev;
  for (long i = 0; i < 100000000 && got < 2; ++i) {
    lci_status_t s;
    if (lci_cq_pop(cq, &s) == LCI_DONE)
      ++got;
    else
      (void)lci_progress(&pa);
  }
  CHECK(got == 2 && strcmp(in, "endpnt") == 0);
  /* the endpoint of one device with another device given */
  sa.device = NULL;
  CHECK(lci_get_default_device(NULL, &sa.device) == LCI_DONE);
  CHECK_FAILS(lci_post_send(0, out, sizeof(out), 9, cq, &sa, &st),
              "lci_post_send", "not of the device given");
  CHECK_FAILS(lci_free_endpoint(&defep, NULL), "lci_free_endpoint", "default");
  lci_endpoint_t ep_copy = ep;
  CHECK(lci_free_endpoint(&ep, NULL) == LCI_DONE && ep == NULL);
  CHECK_FAILS(lci_free_endpoint(&ep_copy, NULL), "lci_free_endpoint", NULL);
  ea.device = (lci_device_t)&ea;
  CHECK_FAILS(lci_alloc_endpoint(&ea, &ep), "lci_alloc_endpoint", NULL);
  dea.device = (lci_device_t)&dea;
  CHECK_FAILS(lci_get_default_endpoint(&dea, &ep), "lci_get_default_endpoint",
              NULL);
  /* the device's endpoints go with it */
  lci_endpoint_t left = NULL;
  ea.device = dev;
  CHECK(lci_alloc_endpoint(&ea, &left) == LCI_DONE);
  CHECK(lci_free_device(&dev, NULL) == LCI_DONE);
  CHECK_FAILS(lci_free_endpoint(&left, NULL), "lci_free_endpoint", NULL);
  CHECK(lci_free_comp(&cq) == LCI_DONE);
}

int main(void)
{
  test_error_codes();
  {
    /* an attribute the runtime refuses: no runtime, an error naming it */
    lci_g_runtime_init_args_t bad = LCI_G_RUNTIME_INIT_ARGS_INIT;
    bad.backend = "bogus";
    CHECK_FAILS(lci_g_runtime_init(&bad, NULL), "lci_g_runtime_init", "bogus");
  }
  CHECK(lci_g_runtime_init(NULL, NULL) == LCI_DONE);
  test_runtime();
  test_device_and_pool();
  test_upstream_handles();
  test_matching_engine();
  test_completion_objects();
  test_graph();
  test_graph_post_nodes();
  test_point_to_point();
  test_rma();
  test_collectives();
  test_thread_local_error();
  test_every_op_fails();
  CHECK(lci_g_runtime_fina() == LCI_DONE);
  CHECK_FAILS(lci_g_runtime_fina(), "lci_g_runtime_fina", "not initialized");
  /* after the global runtime is gone */
  lci_runtime_t g = (lci_runtime_t)&g;
  CHECK(lci_get_g_runtime(&g) == LCI_DONE && g == NULL);
  int me = 0;
  CHECK_FAILS(lci_get_rank_me(NULL, &me), "lci_get_rank_me", NULL);
  printf("test_capi: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 && g_passed > 0 ? 0 : 1;
}
