// LCI: a Lightweight Communication Interface for asynchronous,
// multithreaded programs.
//
// This header holds the basic types (status, errors, completion objects);
// the resources and operations are generated from src/api/spec.py into
// lci_binding.hpp, included at the end. Every operation `op(positional...)`
// also exists as `op_x(positional...)` whose optional arguments are setters
// that chain in any order, run by operator()():
//
//   lci::post_send_x(rank, buf, size, tag, comp).device(dev)();
//
// Thread safety: every operation may be called from any thread unless its
// comment says otherwise. Allocation and free of runtimes and devices are
// collective over the ranks and must not race with other use of the same
// resource. The header parses as C++11. Like upstream LCI 2's, it includes
// <vector>, <memory>, <functional> and <cstring>, which programs written
// for it use without including them.
#ifndef LCI_HPP
#define LCI_HPP

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#define LCI_VERSION_MAJOR 2
#define LCI_VERSION_MINOR 0
#define LCI_VERSION_PATCH 0

namespace lci
{

typedef uint64_t tag_t;
typedef uint32_t rcomp_t;

const int ANY_SOURCE = -1;
const tag_t ANY_TAG = static_cast<tag_t>(-1);
// the "no remote completion" value of an rcomp_t
const rcomp_t RCOMP_NULL = static_cast<rcomp_t>(-1);

// Fatal errors: bad arguments, misuse of resources, network failures. The
// message names the call and the offending value.
class fatal_error : public std::runtime_error
{
 public:
  explicit fatal_error(const std::string& what) : std::runtime_error(what) {}
};

// A peer rank failed or became unreachable.
class peer_failure_error : public fatal_error
{
 public:
  // upstream LCI 2's argument order
  peer_failure_error(int rank, const std::string& what)
      : fatal_error(what), rank_(rank)
  {
  }
  peer_failure_error(const std::string& what, int rank)
      : fatal_error(what), rank_(rank)
  {
  }
  int failed_rank() const noexcept { return rank_; }

 private:
  int rank_;
};

enum class errorcode_t {
  done_min,
  done,          // completed immediately; completion objects not signalled
  done_backlog,  // completed from the backlog queue
  done_max,
  posted_min,
  posted,          // the completion object will be signalled
  posted_backlog,  // queued in the backlog; will be signalled
  posted_max,
  retry_min,
  retry,           // temporarily unavailable: post again later
  retry_init,      // not ready yet (e.g. peers not connected)
  retry_lock,      // a network lock was busy
  retry_nopacket,  // the packet pool is empty
  retry_nomem,     // the network send queue is full
  retry_backlog,   // the backlog queue is not empty
  retry_max,
  fatal,
  // the peer of the operation failed (peer_failure_error): the operation
  // will never complete normally
  fatal_peer_failure,
};

const char* get_errorcode_str(errorcode_t code);

struct error_t {
  errorcode_t errorcode;
  error_t() : errorcode(errorcode_t::retry) {}
  error_t(errorcode_t code) : errorcode(code) {}  // NOLINT: implicit on purpose
  // back to plain retry (upstream LCI 2's name)
  void reset_retry() { errorcode = errorcode_t::retry; }
  bool is_done() const
  {
    return errorcode > errorcode_t::done_min &&
           errorcode < errorcode_t::done_max;
  }
  bool is_posted() const
  {
    return errorcode > errorcode_t::posted_min &&
           errorcode < errorcode_t::posted_max;
  }
  bool is_retry() const
  {
    return errorcode > errorcode_t::retry_min &&
           errorcode < errorcode_t::retry_max;
  }
  bool is_fatal() const { return errorcode >= errorcode_t::fatal; }
  void reset(errorcode_t code = errorcode_t::retry) { errorcode = code; }
  const char* get_str() const { return get_errorcode_str(errorcode); }
  bool operator==(const error_t& o) const { return errorcode == o.errorcode; }
  bool operator!=(const error_t& o) const { return errorcode != o.errorcode; }
};

// The descriptor of a communication: returned by posting calls and passed to
// completion objects.
struct status_t {
  error_t error;
  int rank;            // the peer
  void* buffer;        // the local buffer (or a received active message)
  size_t size;         // bytes moved
  tag_t tag;           // the message's tag
  void* user_context;  // as given to the posting call

  status_t() : rank(-1), buffer(nullptr), size(0), tag(0), user_context(nullptr)
  {
  }
  status_t(errorcode_t code)  // NOLINT: implicit on purpose
      : error(code),
        rank(-1),
        buffer(nullptr),
        size(0),
        tag(0),
        user_context(nullptr)
  {
  }
  // A done status carrying only a user_context: what a program signals to
  // a completion object itself (comp_signal, a custom comp_impl_t).
  explicit status_t(void* user_context_)
      : error(errorcode_t::done),
        rank(-1),
        buffer(nullptr),
        size(0),
        tag(0),
        user_context(user_context_)
  {
  }
  void set_done() { error = errorcode_t::done; }
  void set_posted() { error = errorcode_t::posted; }
  void set_retry() { error = errorcode_t::retry; }
  error_t get_error() const { return error; }
  int get_rank() const { return rank; }
  void* get_buffer() const { return buffer; }
  size_t get_size() const { return size; }
  tag_t get_tag() const { return tag; }
  void* get_user_context() const { return user_context; }
  bool is_done() const { return error.is_done(); }
  bool is_posted() const { return error.is_posted(); }
  bool is_retry() const { return error.is_retry(); }
  bool is_fatal() const { return error.is_fatal(); }
};

// The raw network layer (net_post_*, net_poll_cq): upstream LCI 2's
// operations straight on a device's backend endpoint, without the
// library's protocols. net_poll_cq describes each completed operation with
// a net_status_t: its kind, the peer rank (-1 where the backend does not
// say: a receive, a remote write), the posting call's user_context (null
// for a remote write), the bytes received (RECV) and the immediate data of
// a remote write. ERROR is an operation that failed (docs/ARCHITECTURE.md,
// "The raw network layer").
enum class net_opcode_t { SEND, RECV, WRITE, REMOTE_WRITE, READ, ERROR };
// "SEND", "RECV", ... ("unknown" outside the enum)
const char* get_net_opcode_str(net_opcode_t opcode);
typedef uint32_t net_imm_data_t;
struct net_status_t {
  net_opcode_t opcode;
  int rank;
  void* user_context;
  size_t length;
  net_imm_data_t imm_data;
};

enum class direction_t { OUT, IN };

// When a communication posted with direction OUT counts as complete at its
// initiator (post_comm's `comp_semantic`). A receive completes when the data
// is in its buffer whatever the semantic.
// - memory (default): the local buffer may be reused. Buffer-copy protocols
//   (inject, eager) are complete on return: the post says done.
// - network: the network layer reports the message complete; the post is
//   never done at once, the completion object is signalled later. What the
//   network layer guarantees depends on the provider (docs/ARCHITECTURE.md,
//   "Completion semantics").
// `buffer` is the LCI 2.x spelling of `memory`.
enum class comp_semantic_t { memory = 0, buffer = memory, network = 1 };

// How a send and a receive are matched; the key is (matching engine, source
// rank, tag) restricted by the policy. A send matches a wildcard receive only
// if it was posted with the same policy.
// `max`: upstream LCI 2's boundary marker, not a policy (a post with it
// is a fatal_error)
enum class matching_policy_t { none, rank_only, tag_only, rank_tag, max };

// Direct use of a matching engine (matching_engine_insert) and custom
// matching: a key is 64 bits; an entry is a send or a receive, and
// inserting one either stores it or returns (and removes) the oldest entry
// of the other type under the same key.
typedef uint64_t matching_entry_key_t;
typedef void* matching_entry_val_t;
enum class matching_entry_type_t { send, recv };
// A custom key function for a matching engine (alloc_matching_engine's
// `make_key`): called with the (rank, tag, policy) of every send arriving
// at the engine and of every receive posted to it (after wildcards chose
// the policy); entries with equal keys match. Keys it returns never equal
// the keys of the built-in function, and it must be a pure function.
typedef matching_entry_key_t (*matching_engine_make_key_t)(
    int rank, tag_t tag, matching_policy_t policy);

typedef void (*comp_handler_t)(status_t status);

// Collectives (barrier, broadcast, reduce, allreduce, reduce_scatter,
// allgather, alltoall). A reduction operator computes dst[i] = left[i] op
// right[i] for the n items of the call (dst may be left or right); it must
// be associative and commutative.
typedef void (*reduce_op_t)(const void* left, const void* right, void* dst,
                            size_t n);
// A collective's algorithm (its `algorithm` option); none lets the library
// choose by size and rank count (docs/COLLECTIVES.md).
//   direct  every rank exchanges with every rank it needs at once
//   tree    binomial tree (broadcast); recursive doubling (allreduce);
//           binomial reduce to rank 0 and direct scatter (reduce_scatter)
//   ring    pipelined chain (broadcast); ring reduce-scatter, then ring
//           allgather (allreduce); ring (reduce_scatter, allgather)
enum class broadcast_algorithm_t { none, direct, tree, ring };
enum class allreduce_algorithm_t {
  none,
  direct,
  tree,
  ring,
  recursive_doubling = tree
};
enum class reduce_scatter_algorithm_t { none, direct, tree, ring };
enum class allgather_algorithm_t { none, direct, ring };
// An algorithm's name ("none", "direct", "tree", "ring"; "unknown" for a
// value outside the enum), as upstream LCI 2 names them.
const char* get_broadcast_algorithm_str(broadcast_algorithm_t algorithm);
const char* get_allreduce_algorithm_str(allreduce_algorithm_t algorithm);
const char* get_reduce_scatter_algorithm_str(
    reduce_scatter_algorithm_t algorithm);
const char* get_allgather_algorithm_str(allgather_algorithm_t algorithm);

// Completion graphs: a node runs `status_t fn(void* value)`; its value is
// freed with `free_cb(value)`; an edge may run `fn(status, src, dst)`.
typedef void* graph_node_t;
typedef status_t (*graph_node_run_cb_t)(void* value);
typedef void (*graph_node_free_cb_t)(void* value);
typedef void (*graph_edge_run_cb_t)(status_t status, void* src_value,
                                    void* dst_value);
// The virtual first and last nodes of every graph.
// a node function that does nothing: the node completes when it runs
const graph_node_run_cb_t GRAPH_NODE_DUMMY_CB = nullptr;
const graph_node_t GRAPH_START = reinterpret_cast<graph_node_t>(0x1);
const graph_node_t GRAPH_END = reinterpret_cast<graph_node_t>(0x2);

// The name every resource has unless its allocation names it ("unnamed",
// as upstream LCI 2's).
extern const char* DEFAULT_NAME;
namespace detail
{
// `name` copied for the life of the process (one copy per distinct name),
// or DEFAULT_NAME for nullptr: resources keep this pointer, so the caller's
// string may go right after the allocating call.
const char* resource_name(const char* name);
}  // namespace detail

// The attributes of a completion object (comp_t::get_attr): its name and
// user context, set by the allocating call (.name(), .user_context()).
struct comp_attr_t {
  const char* name;    // DEFAULT_NAME unless named
  void* user_context;  // nullptr unless given
};

// A completion object: anything with a signal(status_t). Users may derive
// their own; signal may run on any thread that calls progress or posts.
// `attr` is what comp_t::get_attr reports (a derived class may set it).
class comp_impl_t
{
 public:
  using attr_t = comp_attr_t;
  comp_impl_t()
  {
    attr.name = DEFAULT_NAME;
    attr.user_context = nullptr;
  }
  explicit comp_impl_t(const attr_t& attr_) : attr(attr_) {}
  virtual ~comp_impl_t() {}
  virtual void signal(status_t status) = 0;
  comp_attr_t attr;
};

class comp_t
{
 public:
  using attr_t = comp_attr_t;
  comp_impl_t* p_impl;
  comp_t() : p_impl(nullptr) {}
  explicit comp_t(comp_impl_t* p) : p_impl(p) {}
  // upstream LCI 2's: a handle from its get_impl() kept as void*
  comp_t(void* p) : p_impl(static_cast<comp_impl_t*>(p)) {}
  comp_t(std::nullptr_t) : p_impl(nullptr) {}
  bool is_empty() const { return p_impl == nullptr; }
  comp_impl_t* get_impl() const { return p_impl; }
  void set_impl(comp_impl_t* p) { p_impl = p; }
  bool operator==(const comp_t& o) const { return p_impl == o.p_impl; }
  bool operator!=(const comp_t& o) const { return p_impl != o.p_impl; }
  // the object's attributes; throw lci::fatal_error on an empty handle or
  // COMP_NULL_RETRY
  comp_attr_t get_attr() const;
  const char* get_attr_name() const;
  void* get_attr_user_context() const;
};

// COMP_NULL: the posting call blocks (driving progress) until complete.
const comp_t COMP_NULL = comp_t();
// COMP_NULL_RETRY: no completion object; the call returns done or retry
// (a sentinel: it is never signalled).
const comp_t COMP_NULL_RETRY = comp_t(reinterpret_cast<comp_impl_t*>(0x1));
// Upstream LCI 2's names of the same two: its COMP_NULL expects done (here
// the call makes it done), its COMP_NULL_RETRY done or retry.
const comp_t COMP_NULL_EXPECT_DONE = COMP_NULL;
const comp_t COMP_NULL_EXPECT_DONE_OR_RETRY = COMP_NULL_RETRY;

// A memory registration (register_memory / deregister_memory): a local
// buffer the network may access directly. Registering is optional for local
// buffers (pass it with .mr() to skip the on-the-fly registration) and
// mandatory for the remote buffer of a put or get.
class mr_impl_t;
// The attributes of a registration: a registration is not named here, so
// they are DEFAULT_NAME and nullptr (upstream LCI 2's fields).
struct mr_attr_t {
  const char* name;
  void* user_context;
};
class mr_t
{
 public:
  mr_impl_t* p_impl;
  mr_t() : p_impl(nullptr) {}
  explicit mr_t(mr_impl_t* p) : p_impl(p) {}
  // upstream LCI 2's: a handle from its get_impl() kept as void*
  mr_t(void* p) : p_impl(static_cast<mr_impl_t*>(p)) {}
  mr_t(std::nullptr_t) : p_impl(nullptr) {}
  void set_impl(mr_impl_t* p) { p_impl = p; }
  // no registration: the empty handle or a memory kind (MR_DEVICE,
  // MR_UNKNOWN below)
  bool is_empty() const { return reinterpret_cast<uintptr_t>(p_impl) < 3; }
  mr_impl_t* get_impl() const { return p_impl; }
  bool operator==(const mr_t& o) const { return p_impl == o.p_impl; }
  bool operator!=(const mr_t& o) const { return p_impl != o.p_impl; }
  // throw lci::fatal_error unless the handle is a live registration
  mr_attr_t get_attr() const;
  const char* get_attr_name() const;
  void* get_attr_user_context() const;
};

// Network contexts and endpoints, upstream LCI 2's names for the network
// layer under a device (docs/ARCHITECTURE.md, "Compatibility with upstream
// LCI 2"). Here a runtime has one network context (its libfabric domain or
// native shm segment) and a device has one endpoint (its send queue and
// completion queue): a net_context_t is a handle on the runtime's context
// and an endpoint_t a handle on its device's endpoint. Posting with
// .endpoint(e) posts on e's device. The attributes report the context in
// force.
class net_context_impl_t;
enum class attr_ibv_odp_strategy_t;
enum class attr_ibv_prefetch_strategy_t;
// The attributes of a net context handle: its name and user context, then
// upstream's settings of a net context, which are the runtime's here (the
// values in force in its network context; alloc_net_context_x refuses
// others).
struct net_context_attr_t {
  const char* name;    // alloc_net_context_x().name(); DEFAULT_NAME
  void* user_context;  // alloc_net_context_x().user_context(); nullptr
  std::string ofi_provider_name;  // "" when the backend is not libfabric
  size_t max_msg_size;
  size_t max_inject_size;
  int ibv_gid_idx;
  bool ibv_force_gid_auto_select;
  attr_ibv_odp_strategy_t ibv_odp_strategy;
  attr_ibv_prefetch_strategy_t ibv_prefetch_strategy;
  bool support_putimm;
};
class net_context_t
{
 public:
  using attr_t = net_context_attr_t;
  net_context_impl_t* p_impl;
  net_context_t() : p_impl(nullptr) {}
  explicit net_context_t(net_context_impl_t* p) : p_impl(p) {}
  // upstream LCI 2's: a handle from its get_impl() kept as void*
  net_context_t(void* p) : p_impl(static_cast<net_context_impl_t*>(p)) {}
  net_context_t(std::nullptr_t) : p_impl(nullptr) {}
  void set_impl(net_context_impl_t* p) { p_impl = p; }
  bool is_empty() const { return p_impl == nullptr; }
  net_context_impl_t* get_impl() const { return p_impl; }
  bool operator==(const net_context_t& o) const { return p_impl == o.p_impl; }
  bool operator!=(const net_context_t& o) const { return p_impl != o.p_impl; }
  // throw lci::fatal_error on an empty or freed handle
  std::string get_attr_backend() const;  // ofi or shm (the runtime's)
  std::string get_attr_ofi_provider_name() const;
  size_t get_attr_max_msg_size() const;     // largest single RDMA transfer
  size_t get_attr_max_inject_size() const;  // largest inject payload
  bool get_attr_support_putimm() const;     // RDMA write with immediate data
  // the runtime's attributes of these names (the ibv backend's settings)
  int get_attr_ibv_gid_idx() const;
  bool get_attr_ibv_force_gid_auto_select() const;
  attr_ibv_odp_strategy_t get_attr_ibv_odp_strategy() const;
  attr_ibv_prefetch_strategy_t get_attr_ibv_prefetch_strategy() const;
  net_context_attr_t get_attr() const;
  const char* get_attr_name() const;
  void* get_attr_user_context() const;
};

// The attributes of an endpoint handle.
struct endpoint_attr_t {
  int uid;             // get_attr_uid
  const char* name;    // alloc_endpoint_x().name(); DEFAULT_NAME
  void* user_context;  // alloc_endpoint_x().user_context(); nullptr
};

class endpoint_impl_t;
class endpoint_t
{
 public:
  using attr_t = endpoint_attr_t;
  endpoint_impl_t* p_impl;
  endpoint_t() : p_impl(nullptr) {}
  explicit endpoint_t(endpoint_impl_t* p) : p_impl(p) {}
  // upstream LCI 2's: a handle from its get_impl() kept as void*
  endpoint_t(void* p) : p_impl(static_cast<endpoint_impl_t*>(p)) {}
  endpoint_t(std::nullptr_t) : p_impl(nullptr) {}
  void set_impl(endpoint_impl_t* p) { p_impl = p; }
  bool is_empty() const { return p_impl == nullptr; }
  endpoint_impl_t* get_impl() const { return p_impl; }
  bool operator==(const endpoint_t& o) const { return p_impl == o.p_impl; }
  bool operator!=(const endpoint_t& o) const { return p_impl != o.p_impl; }
  // a number unique among the process's live endpoints; throws
  // lci::fatal_error on an empty or freed handle
  int get_attr_uid() const;
  endpoint_attr_t get_attr() const;
  const char* get_attr_name() const;
  void* get_attr_user_context() const;
};

// Memory kinds that a post's .mr() may name instead of a registration (the
// names of upstream LCI 2): MR_HOST, the empty handle (host memory,
// registered on the fly where the transfer needs it); MR_UNKNOWN (the
// library finds out: in this build, which has no accelerator support,
// always host memory); MR_DEVICE (accelerator memory: refused with a
// fatal_error naming the call, since this build cannot reach it).
const mr_t MR_HOST = mr_t();
const mr_t MR_DEVICE = mr_t(reinterpret_cast<mr_impl_t*>(0x1));
const mr_t MR_UNKNOWN = mr_t(reinterpret_cast<mr_impl_t*>(0x2));

// What a peer needs to put into or get from a registered region (get_rmr):
// a plain struct to copy into a message. A put or get addresses the byte
// `remote_disp` of the region. `size` bounds the accesses; `runtime` and
// `rank` say whose region it is, so that an rmr used with the wrong runtime
// or the wrong target rank is an error at the posting call. An rmr without
// an owner is empty (RMR_NULL: no remote buffer); the rmr of a zero-size
// registration is not (a put or get of 0 bytes may name it).
struct rmr_t {
  uint64_t base;         // the backend's address of the region's first byte
  uint64_t opaque_rkey;  // the backend's remote key
  uint64_t size;         // bytes registered
  uint32_t runtime;      // the owner's runtime (a value shared by its ranks)
  int32_t rank;          // the owner's rank
  constexpr rmr_t() : base(0), opaque_rkey(0), size(0), runtime(0), rank(-1) {}
  constexpr bool is_empty() const { return size == 0 && rank < 0; }
};
// constexpr: a posting object's test that its rmr is at this default folds
// where the object is built
constexpr rmr_t RMR_NULL = rmr_t();

// Lists of buffers for one post (the paper's Section 3.3.1; upstream LCI
// 2's names): post_comm's .buffers(list) replaces local_buffer and size
// (which must then be nullptr and 0) with a list of local buffers, and
// .rbuffers(list) names one remote buffer per local buffer for a put or
// get. The whole list completes once. docs/ARCHITECTURE.md, "Buffer
// lists", says how each operation moves it.
struct buffer_t {
  void* base;   // first byte
  size_t size;  // bytes
  mr_t mr;      // its registration, if any (as post_comm's .mr())
  buffer_t() : base(nullptr), size(0), mr() {}
  buffer_t(void* base_, size_t size_) : base(base_), size(size_), mr() {}
  buffer_t(void* base_, size_t size_, mr_t mr_)
      : base(base_), size(size_), mr(mr_)
  {
  }
};
struct rbuffer_t {
  uintptr_t disp;  // offset in the remote region
  rmr_t rmr;       // the remote region
  rbuffer_t() : disp(0), rmr() {}
  rbuffer_t(uintptr_t disp_) : disp(disp_), rmr() {}  // NOLINT: as upstream
  rbuffer_t(uintptr_t disp_, rmr_t rmr_) : disp(disp_), rmr(rmr_) {}
};
typedef std::vector<buffer_t> buffers_t;
typedef std::vector<rbuffer_t> rbuffers_t;
// What a posting object holds of a list: a view of the caller's buffers_t
// or rbuffers_t, not a copy, so that a post constructs and destroys no
// container and its object stays trivially destructible. The list must
// therefore outlive the posting call (not only the .buffers() call);
// graph_add_node_op, which keeps the object for later, copies the lists.
template <typename T>
class list_view_t
{
 public:
  list_view_t() : data_(nullptr), size_(0) {}
  list_view_t(const T* data, size_t size) : data_(data), size_(size) {}
  explicit list_view_t(const std::vector<T>& v)
      : data_(v.data()), size_(v.size())
  {
  }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  const T* data_;
  size_t size_;
};
typedef list_view_t<buffer_t> buffers_view_t;
typedef list_view_t<rbuffer_t> rbuffers_view_t;
// The most buffers one list may hold.
const size_t MAX_BUFFERS = 1024;

// Where the buffers of arriving active messages come from (set_allocator,
// get_allocator). allocate(size) returns a buffer of at least `size` bytes,
// or nullptr when it cannot (the message is then reported as a fatal error
// by progress); the receiver of an active message owns its buffer and gives
// it back with deallocate. Both run inside progress, on any thread that
// progresses the device, so an allocator shared by several such threads
// must be thread-safe. The default allocator is std::malloc / std::free.
class allocator_base_t
{
 public:
  virtual ~allocator_base_t() = default;
  virtual void* allocate(size_t size) = 0;
  virtual void deallocate(void* ptr) = 0;
};

// The default allocator (std::malloc, std::free), upstream LCI 2's name:
// get_allocator returns g_allocator_default when none was set, and
// set_allocator(&g_allocator_default) restores the default.
class allocator_default_t : public allocator_base_t
{
 public:
  void* allocate(size_t size) override { return std::malloc(size); }
  void deallocate(void* ptr) override { std::free(ptr); }
};
extern allocator_default_t g_allocator_default;

// A recycling allocator for set_allocator: a buffer given back with
// deallocate goes onto a free list of its size class and is handed out
// again by a later allocate of that class, so the pages of a large buffer
// stay mapped and warm. With the default allocator a large active message
// arrives in memory that glibc has just taken from the kernel (it gives
// large freed chunks and the top of its heap back), which the kernel must
// fault in and zero before the payload lands. Classes are four per power
// of two from 64 bytes (a buffer holds at most a quarter more than asked).
// At most `max_cached_bytes` of free buffers are kept (by class capacity);
// a buffer given back beyond that goes to std::free. Thread-safe (a lock
// per class). The allocator must outlive every buffer it handed out, and
// its destructor frees the cached ones. Install it with
// `lci::set_allocator(&a)`; the receiver then gives a buffer back with
// `a.deallocate(buf)` (or get_allocator()->deallocate), never std::free.
class allocator_recycling_t : public allocator_base_t
{
 public:
  explicit allocator_recycling_t(size_t max_cached_bytes = size_t(1) << 30);
  ~allocator_recycling_t() override;
  allocator_recycling_t(const allocator_recycling_t&) = delete;
  allocator_recycling_t& operator=(const allocator_recycling_t&) = delete;
  void* allocate(size_t size) override;
  void deallocate(void* ptr) override;
  // bytes held in the free lists now (class capacities)
  size_t cached_bytes() const;
  size_t max_cached_bytes() const { return max_cached_; }

 private:
  struct impl_t;
  std::unique_ptr<impl_t> impl_;
  size_t max_cached_;
};

// An optional attribute value of an allocating call (set or not).
template <typename T>
class option_t
{
 public:
  option_t() : m_value(), m_is_set(false) {}
  // upstream LCI 2's: a set value, or a value with its flag
  option_t(T value) : m_value(value), m_is_set(true) {}  // NOLINT: as upstream
  option_t(T value, bool is_set) : m_value(value), m_is_set(is_set) {}
  void set(const T& v)
  {
    m_value = v;
    m_is_set = true;
  }
  bool is_set() const { return m_is_set; }
  const T& get() const { return m_value; }
  T get_value() const { return m_value; }
  T get_value_or(T default_value) const
  {
    return m_is_set ? m_value : default_value;
  }
  // copies the value to *value when set
  bool get_set_value(T* value) const
  {
    if (m_is_set) *value = m_value;
    return m_is_set;
  }
  operator T() const { return m_value; }  // NOLINT: as upstream

  T m_value;
  bool m_is_set;
};

}  // namespace lci

#include "lci_binding.hpp"

namespace lci
{
namespace detail
{
// A functor's result as its node's status: a status_t or an errorcode_t
// (error_t) as it is (done, posted or retry); any other result, void
// included, is done.
template <typename R>
struct node_result {
  template <typename T>
  static status_t run(T& op)
  {
    op();
    return status_t(errorcode_t::done);
  }
};
template <>
struct node_result<status_t> {
  template <typename T>
  static status_t run(T& op)
  {
    return op();
  }
};
template <>
struct node_result<errorcode_t> {
  template <typename T>
  static status_t run(T& op)
  {
    return status_t(op());
  }
};
template <>
struct node_result<error_t> {
  template <typename T>
  static status_t run(T& op)
  {
    return status_t(op().errorcode);
  }
};

// An OFF object of a posting operation (it has local_comp_) completes into
// the graph whatever completion object it was built with; another functor
// signals the graph itself.
template <typename T>
auto point_at_graph(T* op, comp_t graph, int)
    -> decltype(op->local_comp_ = graph, void())
{
  op->local_comp_ = graph;
}
template <typename T>
void point_at_graph(T*, comp_t, long)
{
}

// A graph node's copy of a functor. A posting object's lists are views of
// the caller's vectors, which need not outlive graph_add_node_op: the node
// keeps copies and points the object's views at them.
// std::void_t, which this header cannot use: it parses as C++11
template <typename...>
struct make_void {
  typedef void type;
};
template <typename T, typename = void>
struct node_op_t {
  T op;
  explicit node_op_t(const T& o) : op(o) {}
};
template <typename T>
struct node_op_t<
    T, typename make_void<
           decltype(std::declval<T&>().buffers_ = buffers_view_t()),
           decltype(std::declval<T&>().rbuffers_ = rbuffers_view_t())>::type> {
  T op;
  buffers_t buffers;
  rbuffers_t rbuffers;
  explicit node_op_t(const T& o)
      : op(o),
        buffers(o.buffers_.begin(), o.buffers_.end()),
        rbuffers(o.rbuffers_.begin(), o.rbuffers_.end())
  {
    op.buffers_ = buffers_view_t(buffers);
    op.rbuffers_ = rbuffers_view_t(rbuffers);
  }
  node_op_t(const node_op_t&) = delete;
  node_op_t& operator=(const node_op_t&) = delete;
};
}  // namespace detail

// The node function and free function of a functor node (upstream LCI 2's
// names): run the functor at `value`, delete it.
template <typename T>
status_t graph_execute_op_fn(void* value)
{
  T& f = *static_cast<T*>(value);
  return detail::node_result<typename std::decay<decltype(f())>::type>::run(f);
}

template <typename T>
void graph_free_op_fn(void* value)
{
  delete static_cast<T*>(value);
}

namespace detail
{
// graph_add_node_op's node and free functions (its value: a node_op_t)
template <typename T>
status_t node_op_run(void* value)
{
  return graph_execute_op_fn<T>(&static_cast<node_op_t<T>*>(value)->op);
}
template <typename T>
void node_op_free(void* value)
{
  delete static_cast<node_op_t<T>*>(value);
}
}  // namespace detail

// A functor as a graph node: `op` has operator()() and user_context(void*)
// (as upstream LCI 2 requires). It is copied; the copy's user_context is
// set to the new node, and operator()() runs as the node's function: a
// result of done completes the node now, posted when the graph is
// signalled with a status whose user_context is the node (comp_signal(graph,
// status_t(user_context)), or a posting operation's completion), retry runs
// it again later; a result that is no status or error code counts as done.
// An OFF object of a posting operation (post_send_x(rank, buf, size, tag,
// COMP_NULL).device(d), say) is such a functor; its completion object is
// pointed at `graph`, and its buffer lists are copied with it. The copy is
// deleted with the graph.
template <typename T>
graph_node_t graph_add_node_op(comp_t graph, const T& op)
{
  auto* copy = new detail::node_op_t<T>(op);
  graph_node_t node;
  try {
    node = graph_add_node_x(graph, &detail::node_op_run<T>)
               .value(copy)
               .free_cb(&detail::node_op_free<T>)();
  } catch (...) {
    delete copy;
    throw;
  }
  detail::point_at_graph(&copy->op, graph, 0);
  copy->op.user_context(node);
  return node;
}
}  // namespace lci

#endif  // LCI_HPP
