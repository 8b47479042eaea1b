/* The C side of capi_pingpong (pingpong_c.c), called from C++. */
#ifndef LCI_BENCH_CAPI_PINGPONG_C_H
#define LCI_BENCH_CAPI_PINGPONG_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* allocates the C side's completion queue and registers it (after the C++
 * side's, in the same order on every rank) */
void capi_pingpong_c_setup(void);
void capi_pingpong_c_teardown(void);
/* `iters` round trips with `peer` (itself when alone); returns the sum of
 * the values received, which the caller checks */
uint64_t capi_pingpong_c(long iters, int peer, int initiator);

#ifdef __cplusplus
}
#endif

#endif /* LCI_BENCH_CAPI_PINGPONG_C_H */
