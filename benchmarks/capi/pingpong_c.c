/* The C side of capi_pingpong: the same 8-byte active-message ping-pong as
 * the C++ side of capi_pingpong.cpp, through lci.h. */
#include "pingpong_c.h"

#include <lci.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lci_comp_t g_cq;
static lci_rcomp_t g_rcomp;
static const lci_allocator_t* g_allocator;

static void fail(const char* call, lci_error_t rc)
{
  fprintf(stderr, "capi_pingpong (C): %s: %s: %s\n", call,
          lci_get_errorcode_str(rc), lci_error_string());
  exit(1);
}

void capi_pingpong_c_setup(void)
{
  lci_error_t rc;
  if ((rc = lci_alloc_cq(NULL, &g_cq)) != LCI_DONE) fail("alloc_cq", rc);
  if ((rc = lci_register_rcomp(g_cq, NULL, &g_rcomp)) != LCI_DONE)
    fail("register_rcomp", rc);
  lci_get_allocator(NULL, &g_allocator);
}

void capi_pingpong_c_teardown(void)
{
  lci_deregister_rcomp(g_rcomp, NULL);
  lci_free_comp(&g_cq);
}

static void send8(int peer, uint64_t* v)
{
  lci_error_t rc;
  while (lci_is_retry(
      rc = lci_post_am(peer, v, 8, LCI_COMP_NULL_RETRY, g_rcomp, NULL, NULL)))
    lci_progress(NULL);
  if (rc != LCI_DONE) fail("post_am", rc);
}

static uint64_t recv8(void)
{
  lci_status_t s;
  lci_error_t rc;
  while ((rc = lci_cq_pop(g_cq, &s)) == LCI_RETRY) lci_progress(NULL);
  if (rc != LCI_DONE) fail("cq_pop", rc);
  uint64_t v;
  memcpy(&v, s.buffer, 8);
  g_allocator->deallocate(s.buffer, g_allocator->context);
  return v;
}

uint64_t capi_pingpong_c(long iters, int peer, int initiator)
{
  uint64_t sum = 0;
  for (long i = 0; i < iters; ++i) {
    uint64_t v = (uint64_t)i;
    if (initiator) {
      send8(peer, &v);
      sum += recv8();
    } else {
      v = recv8();
      sum += v;
      send8(peer, &v);
    }
  }
  return sum;
}
