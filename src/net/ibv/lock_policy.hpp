// The try-lock granularity of a device's queue pairs (paper 4.2.3): the
// attribute ibv_td_strategy puts every queue pair in its own thread domain
// (per_qp: the provider's host-side locks are per queue pair, so are ours),
// or all of them in one (all_qp) or none (none: they may share hardware
// resources under one provider lock), and then one try-lock covers them all.
// The completion queue and the shared receive queue have a try-lock each
// whatever the strategy (device.cpp).
#ifndef LCI_NET_IBV_LOCK_POLICY_HPP
#define LCI_NET_IBV_LOCK_POLICY_HPP

#include <memory>

#include "lci.hpp"
#include "util/spinlock.hpp"

namespace lci::net::ibv
{

using td_strategy_t = attr_ibv_td_strategy_t;

class qp_locks_t
{
 public:
  qp_locks_t(td_strategy_t s, int nqp);
  // the try-lock of queue pair `i`
  util::spinlock_t& of(int i) { return own_ ? own_[i] : shared_; }
  // thread domains to allocate: one per queue pair, one, or none
  int thread_domains() const;
  td_strategy_t strategy() const { return s_; }

 private:
  td_strategy_t s_;
  int n_;
  util::spinlock_t shared_;
  std::unique_ptr<util::spinlock_t[]> own_;  // per_qp only
};

}  // namespace lci::net::ibv

#endif  // LCI_NET_IBV_LOCK_POLICY_HPP
