#include "net/ibv/qp_table.hpp"

#include <algorithm>
#include <cstring>

#include "util/error.hpp"

namespace lci::net::ibv
{

void qp_table_t::clear()
{
  for (peer_t& p : peers_) v_->destroy_qp(p.qp);
  std::vector<peer_t>().swap(peers_);
  by_qpn_.clear();
}

void qp_table_t::add(const qp_t& qp, uint32_t psn)
{
  // peer_t holds an atomic: grow by reconstruction, never by copy
  std::vector<peer_t> grown(peers_.size() + 1);
  for (size_t i = 0; i < peers_.size(); ++i) {
    grown[i].qp = peers_[i].qp;
    grown[i].psn = peers_[i].psn;
    grown[i].state.store(peers_[i].state.load());
  }
  grown.back().qp = qp;
  grown.back().psn = psn;
  peers_.swap(grown);
  const int rank = static_cast<int>(peers_.size() - 1);
  auto at = std::lower_bound(by_qpn_.begin(), by_qpn_.end(),
                             std::make_pair(qp.qpn, rank));
  by_qpn_.insert(at, {qp.qpn, rank});
}

void qp_table_t::fail(int rank, const char* step, int err)
{
  peers_[rank].state.store(qp_state_t::error, std::memory_order_release);
  util::throw_fatal("ibv backend: the queue pair to rank ", rank,
                    " cannot go to ", step, ": ",
                    err ? std::strerror(err) : "not in the state before it");
}

void qp_table_t::to_rtr(int rank, const qp_addr_t& remote)
{
  peer_t& p = peers_[rank];
  if (p.state.load(std::memory_order_acquire) != qp_state_t::init)
    fail(rank, "RTR", 0);
  if (int e = v_->to_rtr(p.qp, remote)) fail(rank, "RTR", e);
  p.state.store(qp_state_t::rtr, std::memory_order_release);
}

void qp_table_t::ensure_rts(int rank)
{
  peer_t& p = peers_[rank];
  const qp_state_t s = p.state.load(std::memory_order_acquire);
  if (s == qp_state_t::rts) return;
  if (s != qp_state_t::rtr) fail(rank, "RTS", 0);
  if (int e = v_->to_rts(p.qp, p.psn)) fail(rank, "RTS", e);
  p.state.store(qp_state_t::rts, std::memory_order_release);
}

int qp_table_t::rank_of(uint32_t qpn) const
{
  auto it =
      std::lower_bound(by_qpn_.begin(), by_qpn_.end(), std::make_pair(qpn, -1));
  if (it == by_qpn_.end() || it->first != qpn) return -1;
  return it->second;
}

}  // namespace lci::net::ibv
