#include "net/ibv/lock_policy.hpp"

#include "util/error.hpp"

namespace lci::net::ibv
{

qp_locks_t::qp_locks_t(td_strategy_t s, int nqp) : s_(s), n_(nqp)
{
  if (s == td_strategy_t::per_qp)
    own_.reset(new util::spinlock_t[static_cast<size_t>(nqp)]);
}

int qp_locks_t::thread_domains() const
{
  switch (s_) {
    case td_strategy_t::per_qp:
      return n_;
    case td_strategy_t::all_qp:
      return 1;
    default:
      return 0;
  }
}

}  // namespace lci::net::ibv
