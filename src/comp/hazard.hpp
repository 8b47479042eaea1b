// Hazard pointers for the LCRQ ring segments (Michael, IEEE TPDS 2004), with
// "sticky" hazards: a thread's hazard keeps naming the ring of its last
// operation after the operation returns, so in steady state (the same head
// and tail ring, operation after operation) protecting costs one load and a
// compare, and the seq_cst store is paid only when the ring changes. The
// price: a retired ring stays unreusable until every thread that touched it
// last has moved on (or exited); it is then reused or freed.
//
// Every thread that uses an LCRQ gets one record (two hazard slots: the ring
// it pushes to and the ring it pops from) from a global list; records are
// never freed, and are handed to new threads when their thread exits.
//
// Protocol. Reader: r = src.load(); if hp != r { hp.store(r); re-load src;
// retry if it changed }; then r is safe to use until hp changes. Reclaimer:
// unlink r (so src no longer names it), then scan every record; free r only
// when no hazard names it. All the accesses involved are seq_cst.
// Thread safety: any-thread.
#ifndef LCI_COMP_HAZARD_HPP
#define LCI_COMP_HAZARD_HPP

#include <atomic>

namespace lci::comp_detail::hazard
{

struct alignas(64) record_t {
  std::atomic<void*> hp[2] = {{nullptr}, {nullptr}};
  std::atomic<bool> in_use{false};
  record_t* next = nullptr;  // immutable once the record is in the list
};

enum slot_t { kPushSlot = 0, kPopSlot = 1 };

// This thread's record, or null before its first use. initial-exec: liblci
// is linked, not dlopen'ed, and one pointer fits the static TLS surplus.
// Inline, with its constant initializer in sight: an extern declaration
// would make every access first test for a TLS init function (a dynamic
// initializer in another translation unit), on each push and pop.
inline thread_local record_t* t_record
    __attribute__((tls_model("initial-exec"))) = nullptr;

// Slow path of my_record: take a free record or add one; arranges for the
// record to be released when the thread exits.
record_t* acquire_record();

inline record_t* my_record()
{
  record_t* r = t_record;
  if (__builtin_expect(r == nullptr, 0)) r = acquire_record();
  return r;
}

// The head of the list of all records (for scans).
record_t* records();

// Loads src and protects the value with this thread's hazard `slot`.
template <typename T>
T* protect(const std::atomic<T*>& src, slot_t slot)
{
  std::atomic<void*>& hp = my_record()->hp[slot];
  T* p = src.load(std::memory_order_seq_cst);
  for (;;) {
    if (hp.load(std::memory_order_relaxed) == p) return p;
    hp.store(p, std::memory_order_seq_cst);
    T* q = src.load(std::memory_order_seq_cst);
    if (q == p) return p;
    p = q;
  }
}

// True when some thread's hazard names p. Call after p was unlinked.
bool is_protected(const void* p);

}  // namespace lci::comp_detail::hazard

#endif  // LCI_COMP_HAZARD_HPP
