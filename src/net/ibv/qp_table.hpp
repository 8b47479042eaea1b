// The queue pairs of one device, one reliable-connected queue pair per
// peer rank (itself included), and their connection state machine:
//   init (created) -> rtr (ready to receive: the peer's address is known)
//   -> rts (ready to send); any failed transition -> error.
// connect() takes every queue pair to rtr, so a peer may send first; rts
// comes at connect() too, or, in jobs larger than the lazy threshold, on
// the first send to that peer (ensure_rts, under the queue pair's lock).
// The table also maps a completion's local QP number back to the rank.
#ifndef LCI_NET_IBV_QP_TABLE_HPP
#define LCI_NET_IBV_QP_TABLE_HPP

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "net/ibv/verbs.hpp"

namespace lci::net::ibv
{

enum class qp_state_t : uint8_t { init, rtr, rts, error };

class qp_table_t
{
 public:
  explicit qp_table_t(verbs_t* v) : v_(v) {}
  ~qp_table_t() { clear(); }
  // destroys every queue pair
  void clear();

  // Queue pair of `rank` (ranks added in order 0, 1, ...), in state init.
  void add(const qp_t& qp, uint32_t psn);
  size_t size() const { return peers_.size(); }
  const qp_t& qp(int rank) const { return peers_[rank].qp; }
  uint32_t psn(int rank) const { return peers_[rank].psn; }
  qp_state_t state(int rank) const
  {
    return peers_[rank].state.load(std::memory_order_acquire);
  }

  // init -> rtr towards `remote`; fatal_error when not in init or the
  // device refuses.
  void to_rtr(int rank, const qp_addr_t& remote);
  // rtr -> rts, or nothing when rts already (the caller serializes the
  // queue pair: its lock); fatal_error from any other state.
  void ensure_rts(int rank);
  // The rank of the local queue pair `qpn`, or -1.
  int rank_of(uint32_t qpn) const;

 private:
  struct peer_t {
    qp_t qp;
    uint32_t psn;
    std::atomic<qp_state_t> state{qp_state_t::init};
  };
  [[noreturn]] void fail(int rank, const char* step, int err);

  verbs_t* v_;
  std::vector<peer_t> peers_;
  std::vector<std::pair<uint32_t, int>> by_qpn_;  // sorted
};

}  // namespace lci::net::ibv

#endif  // LCI_NET_IBV_QP_TABLE_HPP
