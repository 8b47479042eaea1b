/* LCI's C interface: the operations, resources and completion objects of
 * lci.hpp for programs written in C (C99 or later; the header also parses as
 * C++).
 *
 * This header holds the basic types (error codes, status, handles, enums,
 * callbacks); the operations are generated from src/api/spec.py, the list
 * that also generates the C++ interface, into lci_c_binding.h, included at
 * the end. Every operation `op(positional...)` of the C++ interface is
 *
 *   lci_error_t lci_op(positional..., const lci_op_args_t* args, T* out);
 *
 * - `args` (only when the operation has optional arguments): NULL for every
 *   default, else a struct initialised by LCI_OP_ARGS_INIT with the fields
 *   the caller wants changed:
 *
 *     lci_post_am_args_t a = LCI_POST_AM_ARGS_INIT;
 *     a.device = dev;
 *     lci_status_t st;
 *     lci_error_t rc = lci_post_am(rank, buf, 8, cq, rcomp, &a, &st);
 *
 *   Resource attributes of an allocating call (lci_alloc_device's
 *   net_max_sends...) start unset (LCI_UNSET: all bits one, NULL for a
 *   string): the environment variable LCI_ATTR_<NAME>, else the default,
 *   applies (docs/REFERENCE.md).
 * - `out` (only when the operation returns a value): where the value goes;
 *   may be NULL to discard it. A status is written even when the call
 *   fails (its error is the returned code); another value only on
 *   success.
 * - The return value: for an operation returning a status (the posting
 *   calls, lci_cq_pop, lci_graph_test) its error code (done, posted or
 *   retry); for one returning an error code (lci_progress, lci_test_drained)
 *   that code; for the others LCI_DONE. A failure (what the C++ interface
 *   throws as lci::fatal_error) returns LCI_FATAL, or LCI_FATAL_PEER_FAILURE
 *   when a peer rank failed, and lci_error_string() says what went wrong.
 *   No C++ exception leaves a function of this header. (A status may
 *   itself carry a fatal code, e.g. the status of a failed communication
 *   that lci_cq_pop returns: then `*out` is that status and the call did
 *   not fail.)
 *
 * Handles are opaque pointers; NULL is the empty handle (in an args struct:
 * the default resource). A free sets the caller's handle to NULL.
 *
 * Thread safety and semantics are those of the C++ operation of the same
 * name (lci.hpp, docs/ARCHITECTURE.md "Threading rules"). */
#ifndef LCI_H
#define LCI_H

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#define LCI_VERSION_MAJOR 2
#define LCI_VERSION_MINOR 0
#define LCI_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: the values of lci::errorcode_t. The _MIN and _MAX values
 * bound the classes; test a code with lci_is_done() and its siblings. */
typedef enum lci_error_t {
  LCI_DONE_MIN,
  LCI_DONE,         /* completed immediately; completion objects not
                       signalled */
  LCI_DONE_BACKLOG, /* completed from the backlog queue */
  LCI_DONE_MAX,
  LCI_POSTED_MIN,
  LCI_POSTED,         /* the completion object will be signalled */
  LCI_POSTED_BACKLOG, /* queued in the backlog; will be signalled */
  LCI_POSTED_MAX,
  LCI_RETRY_MIN,
  LCI_RETRY,          /* temporarily unavailable: post again later */
  LCI_RETRY_INIT,     /* not ready yet (e.g. peers not connected) */
  LCI_RETRY_LOCK,     /* a network lock was busy */
  LCI_RETRY_NOPACKET, /* the packet pool is empty */
  LCI_RETRY_NOMEM,    /* the network send queue is full */
  LCI_RETRY_BACKLOG,  /* the backlog queue is not empty */
  LCI_RETRY_MAX,
  LCI_FATAL, /* the call failed: lci_error_string() says why */
  /* the peer of the operation failed: it will never complete normally */
  LCI_FATAL_PEER_FAILURE
} lci_error_t;

static inline bool lci_is_done(lci_error_t e)
{
  return e > LCI_DONE_MIN && e < LCI_DONE_MAX;
}
static inline bool lci_is_posted(lci_error_t e)
{
  return e > LCI_POSTED_MIN && e < LCI_POSTED_MAX;
}
static inline bool lci_is_retry(lci_error_t e)
{
  return e > LCI_RETRY_MIN && e < LCI_RETRY_MAX;
}
static inline bool lci_is_fatal(lci_error_t e) { return e >= LCI_FATAL; }

/* The name of an error code ("done", "retry_nopacket", ...). */
const char* lci_get_errorcode_str(lci_error_t code);

/* What the last failed call of this thread (one that returned LCI_FATAL or
 * LCI_FATAL_PEER_FAILURE) reported: the call and the offending value. ""
 * when no call failed on this thread. A successful call leaves it as it
 * is. Valid until the thread's next failing call. */
const char* lci_error_string(void);

typedef uint64_t lci_tag_t;
typedef uint32_t lci_rcomp_t;

#define LCI_ANY_SOURCE (-1)
#define LCI_ANY_TAG ((lci_tag_t)-1)
/* the "no remote completion" value of an lci_rcomp_t */
#define LCI_RCOMP_NULL ((lci_rcomp_t)-1)

/* The unset value of a resource attribute in an args struct (all bits one
 * in the field's type; NULL for a string); no attribute accepts it. */
#define LCI_UNSET (-1)

/* The descriptor of a communication (lci::status_t, same layout): returned
 * by posting calls and passed to completion objects. */
typedef struct lci_status_t {
  lci_error_t error;
  int rank;           /* the peer */
  void* buffer;       /* the local buffer (or a received active message) */
  size_t size;        /* bytes moved */
  lci_tag_t tag;      /* the message's tag */
  void* user_context; /* as given to the posting call */
} lci_status_t;
/* an initializer of a status with error code `code` and no peer */
/* clang-format off */
#define LCI_STATUS_INIT(code) {(code), -1, NULL, 0, 0, NULL}
/* clang-format on */

/* Handles (NULL: empty); the resource handles (lci_runtime_t,
 * lci_device_t, ...) are generated with the operations. */
typedef struct lci_mr_s* lci_mr_t;
/* Upstream LCI 2's network context and endpoint: handles on a runtime's one
 * network context and on a device's one endpoint (lci.hpp). */
typedef struct lci_net_context_s* lci_net_context_t;
typedef struct lci_endpoint_s* lci_endpoint_t;
/* A completion object: a synchronizer, completion queue, handler, counter
 * or graph of this interface, or a C++ lci::comp_impl_t. */
typedef struct lci_comp_s* lci_comp_t;

/* LCI_COMP_NULL: the posting call blocks (driving progress) until
 * complete. LCI_COMP_NULL_RETRY: no completion object; the call returns
 * done or retry (a sentinel: it is never signalled). */
#define LCI_COMP_NULL ((lci_comp_t)0)
#define LCI_COMP_NULL_RETRY ((lci_comp_t)0x1)

/* What a peer needs to put into or get from a registered region
 * (lci_get_rmr; lci::rmr_t): a plain struct to copy into a message. Size 0
 * is empty. */
typedef struct lci_rmr_t {
  uint64_t base;
  uint64_t opaque_rkey;
  uint64_t size;
  uint32_t runtime;
  int32_t rank;
} lci_rmr_t;
/* clang-format off */
#define LCI_RMR_NULL_INIT {0, 0, 0, 0, -1}
/* clang-format on */

/* A list of buffers for one post (lci::buffer_t, lci::rbuffer_t): a post's
 * args `buffers` (with `buffers_count`) replaces local_buffer and size,
 * which must be NULL and 0; `rbuffers` names one remote buffer per local
 * one for a put or get. At most LCI_MAX_BUFFERS in a list. The library
 * reads the arrays during the call, not after (a graph node copies them):
 * they must live until the posting call returns. */
typedef struct lci_buffer_t {
  void* base;
  size_t size;
  lci_mr_t mr; /* NULL: none */
} lci_buffer_t;
typedef struct lci_rbuffer_t {
  uintptr_t disp;
  lci_rmr_t rmr;
} lci_rbuffer_t;
#define LCI_MAX_BUFFERS 1024

typedef enum lci_direction_t {
  LCI_DIRECTION_OUT,
  LCI_DIRECTION_IN
} lci_direction_t;

/* lci::comp_semantic_t: when an OUT communication completes at its
 * initiator (lci.hpp). */
typedef enum lci_comp_semantic_t {
  LCI_COMP_SEMANTIC_MEMORY = 0,
  LCI_COMP_SEMANTIC_BUFFER = 0,
  LCI_COMP_SEMANTIC_NETWORK = 1
} lci_comp_semantic_t;

typedef enum lci_matching_policy_t {
  LCI_MATCHING_POLICY_NONE,
  LCI_MATCHING_POLICY_RANK_ONLY,
  LCI_MATCHING_POLICY_TAG_ONLY,
  LCI_MATCHING_POLICY_RANK_TAG
} lci_matching_policy_t;

/* Direct use of a matching engine (lci_matching_engine_insert). */
typedef uint64_t lci_matching_entry_key_t;
typedef void* lci_matching_entry_val_t;
typedef enum lci_matching_entry_type_t {
  LCI_MATCHING_ENTRY_TYPE_SEND,
  LCI_MATCHING_ENTRY_TYPE_RECV
} lci_matching_entry_type_t;
/* A custom key function of a matching engine (lci.hpp). */
typedef lci_matching_entry_key_t (*lci_matching_engine_make_key_t)(
    int rank, lci_tag_t tag, lci_matching_policy_t policy);

/* Handler completion objects: `fn(status, context)` runs on every signal,
 * on the signalling thread, with the context given to lci_alloc_handler. */
typedef void (*lci_comp_handler_t)(lci_status_t status, void* context);

/* Collectives: dst[i] = left[i] op right[i] for n items (lci.hpp). */
typedef void (*lci_reduce_op_t)(const void* left, const void* right, void* dst,
                                size_t n);
typedef enum lci_broadcast_algorithm_t {
  LCI_BROADCAST_ALGORITHM_NONE,
  LCI_BROADCAST_ALGORITHM_DIRECT,
  LCI_BROADCAST_ALGORITHM_TREE,
  LCI_BROADCAST_ALGORITHM_RING
} lci_broadcast_algorithm_t;
typedef enum lci_allreduce_algorithm_t {
  LCI_ALLREDUCE_ALGORITHM_NONE,
  LCI_ALLREDUCE_ALGORITHM_DIRECT,
  LCI_ALLREDUCE_ALGORITHM_TREE,
  LCI_ALLREDUCE_ALGORITHM_RING,
  LCI_ALLREDUCE_ALGORITHM_RECURSIVE_DOUBLING = LCI_ALLREDUCE_ALGORITHM_TREE
} lci_allreduce_algorithm_t;
typedef enum lci_reduce_scatter_algorithm_t {
  LCI_REDUCE_SCATTER_ALGORITHM_NONE,
  LCI_REDUCE_SCATTER_ALGORITHM_DIRECT,
  LCI_REDUCE_SCATTER_ALGORITHM_TREE,
  LCI_REDUCE_SCATTER_ALGORITHM_RING
} lci_reduce_scatter_algorithm_t;
typedef enum lci_allgather_algorithm_t {
  LCI_ALLGATHER_ALGORITHM_NONE,
  LCI_ALLGATHER_ALGORITHM_DIRECT,
  LCI_ALLGATHER_ALGORITHM_RING
} lci_allgather_algorithm_t;

/* Completion graphs: a node runs `fn(value)` (done: complete now; posted:
 * complete when the graph is signalled with user_context == the node);
 * `free_cb(value)` frees its value; an edge may run fn(status, src value,
 * dst value). */
typedef void* lci_graph_node_t;
typedef lci_status_t (*lci_graph_node_run_cb_t)(void* value);
typedef void (*lci_graph_node_free_cb_t)(void* value);
typedef void (*lci_graph_edge_run_cb_t)(lci_status_t status, void* src_value,
                                        void* dst_value);
/* The virtual first and last nodes of every graph. */
#define LCI_GRAPH_START ((lci_graph_node_t)0x1)
#define LCI_GRAPH_END ((lci_graph_node_t)0x2)

/* Where the buffers of arriving active messages come from
 * (lci_set_allocator; lci::allocator_base_t): allocate(size, context)
 * returns at least `size` bytes or NULL; deallocate(ptr, context) gives one
 * back. Both run inside progress, on any thread that progresses the device.
 * The struct must outlive the runtime's communication (it is read at every
 * call, not copied). The receiver of an active message frees its buffer
 * with the allocator in force:
 *
 *   const lci_allocator_t* a;
 *   lci_get_allocator(NULL, &a);
 *   a->deallocate(status.buffer, a->context); */
typedef struct lci_allocator_t {
  void* (*allocate)(size_t size, void* context);
  void (*deallocate)(void* ptr, void* context);
  void* context;
} lci_allocator_t;

#ifdef __cplusplus
}
#endif

#include "lci_c_binding.h"

#endif /* LCI_H */
