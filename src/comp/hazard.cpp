// Hazard-pointer records: a global, append-only list; see hazard.hpp.
#include "comp/hazard.hpp"

namespace lci::comp_detail::hazard
{

namespace
{

std::atomic<record_t*> g_records{nullptr};

// Gives the record back when the thread exits.
struct releaser_t {
  bool armed = false;
  ~releaser_t()
  {
    record_t* r = t_record;
    if (!r) return;
    r->hp[0].store(nullptr, std::memory_order_seq_cst);
    r->hp[1].store(nullptr, std::memory_order_seq_cst);
    t_record = nullptr;
    r->in_use.store(false, std::memory_order_release);
  }
};
thread_local releaser_t t_releaser;

}  // namespace

record_t* acquire_record()
{
  record_t* r = nullptr;
  for (record_t* p = g_records.load(std::memory_order_acquire); p;
       p = p->next) {
    bool expected = false;
    if (!p->in_use.load(std::memory_order_relaxed) &&
        p->in_use.compare_exchange_strong(expected, true,
                                          std::memory_order_acquire)) {
      r = p;
      break;
    }
  }
  if (!r) {
    r = new record_t;  // reachable from g_records: never leaked
    r->in_use.store(true, std::memory_order_relaxed);
    record_t* head = g_records.load(std::memory_order_relaxed);
    do {
      r->next = head;
    } while (!g_records.compare_exchange_weak(
        head, r, std::memory_order_release, std::memory_order_relaxed));
  }
  t_record = r;
  t_releaser.armed = true;  // constructs the releaser on this thread
  return r;
}

record_t* records() { return g_records.load(std::memory_order_acquire); }

bool is_protected(const void* p)
{
  for (record_t* r = records(); r; r = r->next)
    if (r->hp[0].load(std::memory_order_seq_cst) == p ||
        r->hp[1].load(std::memory_order_seq_cst) == p)
      return true;
  return false;
}

}  // namespace lci::comp_detail::hazard
