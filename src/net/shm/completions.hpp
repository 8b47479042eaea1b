// Completions the native shm backend generates itself, returned first by
// the next poll: sends with comp_semantic network once the target's
// consumer passed them, and transfers that failed or were refused (a
// transfer that succeeds in the call reports done instead).
#ifndef LCI_NET_SHM_COMPLETIONS_HPP
#define LCI_NET_SHM_COMPLETIONS_HPP

#include <atomic>
#include <cstddef>
#include <deque>

#include "net/net.hpp"
#include "util/spinlock.hpp"

namespace lci::net::shm
{

class local_cqes_t
{
 public:
  void push(cqe_t::kind_t kind, void* ctx, const char* error = nullptr,
            bool refused = false);
  // whether take would find any (a relaxed load: the poll's first test)
  bool any() const { return n_.load(std::memory_order_relaxed) > 0; }
  size_t take(cqe_t* out, size_t max);
  size_t size();  // diagnostics

 private:
  alignas(64) util::spinlock_t lock_;
  std::atomic<size_t> n_{0};
  std::deque<cqe_t> q_;
};

}  // namespace lci::net::shm

#endif  // LCI_NET_SHM_COMPLETIONS_HPP
