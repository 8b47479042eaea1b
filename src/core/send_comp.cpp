#include "core/send_comp.hpp"

#include <utility>
#include <vector>

#include "core/peer_failure.hpp"

namespace lci
{
namespace
{

// What a send with comp_semantic network signals when the network is done.
struct send_comp_t : pending_send_t {
  comp_impl_t* comp;
  status_t status;
};

void link(device_impl_t* dev, pending_send_t* s)
{
  util::spin_guard_t g(dev->pending_lock);
  s->prev = &dev->pending_sends;
  s->next = dev->pending_sends.next;
  s->next->prev = s;
  dev->pending_sends.next = s;
  s->linked = true;
}

void unlink_locked(pending_send_t* s)
{
  s->prev->next = s->next;
  s->next->prev = s->prev;
  s->linked = false;
}

// Takes `s` out of the device's lists: true if it was still pending (the
// caller then signals it), false if a peer failure signalled it already
// (it was in failed_sends).
bool unlink(device_impl_t* dev, pending_send_t* s)
{
  util::spin_guard_t g(dev->pending_lock);
  if (s->linked) {
    unlink_locked(s);
    return true;
  }
  if (s->failed) {
    s->prev->next = s->next;
    s->next->prev = s->prev;
    s->failed = false;
  }
  return false;
}

}  // namespace

size_t fail_network_sends(device_impl_t* dev, int rank)
{
  // what to signal, copied under the lock: once the lock is released, the
  // record's completion may come and free it
  std::vector<std::pair<comp_impl_t*, status_t>> failed;
  {
    util::spin_guard_t g(dev->pending_lock);
    pending_send_t* s = dev->pending_sends.next;
    while (s != &dev->pending_sends) {
      pending_send_t* next = s->next;
      if (s->rank == rank) {
        unlink_locked(s);
        // kept in failed_sends: freed by its completion, if it ever comes,
        // or with the device (release_failed_sends)
        s->prev = &dev->failed_sends;
        s->next = dev->failed_sends.next;
        s->next->prev = s;
        dev->failed_sends.next = s;
        s->failed = true;
        auto* sc = static_cast<send_comp_t*>(s);
        failed.emplace_back(sc->comp, sc->status);
      }
      s = next;
    }
  }
  // The packets stay with the network. The sends no longer count as
  // pending (free_device need not wait for them: they may never complete);
  // complete_send does not count them down again.
  for (auto& f : failed) {
    f.first->signal(peer_failure_status(rank, f.second.buffer, f.second.tag,
                                        f.second.user_context));
    dev->nsends_pending.fetch_sub(1, std::memory_order_release);
  }
  return failed.size();
}

error_t post_packet(device_impl_t* dev, int rank, packet_t* p, size_t wire,
                    comp_impl_t* comp, const status_t& status)
{
  if (comp) {
    auto* sc = new send_comp_t;
    sc->rank = rank;
    sc->comp = comp;
    sc->status = status;
    link(dev, sc);
    p->send_comp = sc;
  }
  dev->nsends_pending.fetch_add(1, std::memory_order_relaxed);
  error_t e = comp ? dev->net.post_send_network(rank, p->data(), wire, p)
                   : dev->net.post_send(rank, p->data(), wire, p);
  if (e.is_done()) {
    // the backend copied the packet: no completion follows
    complete_send(dev, p);
    return e;
  }
  if (e.is_retry()) {
    auto* sc = static_cast<send_comp_t*>(p->send_comp);
    if (sc && !unlink(dev, sc)) {
      // a peer failure signalled it (and counted it down) meanwhile: the
      // post is over, and the packet goes back as its completion would
      delete sc;
      p->send_comp = nullptr;
      packet_pool_impl_t::put(p);
      return errorcode_t::posted;
    }
    dev->nsends_pending.fetch_sub(1, std::memory_order_relaxed);
    delete sc;
    p->send_comp = nullptr;
  }
  return e;
}

void release_failed_sends(device_impl_t* dev)
{
  std::vector<send_comp_t*> left;
  {
    util::spin_guard_t g(dev->pending_lock);
    pending_send_t* s = dev->failed_sends.next;
    while (s != &dev->failed_sends) {
      left.push_back(static_cast<send_comp_t*>(s));
      s = s->next;
    }
    dev->failed_sends.prev = dev->failed_sends.next = &dev->failed_sends;
  }
  for (send_comp_t* sc : left) delete sc;
}

void complete_send(device_impl_t* dev, packet_t* p)
{
  auto* sc = static_cast<send_comp_t*>(p->send_comp);
  p->send_comp = nullptr;
  // the signal comes first, while the payload (a user packet's, say) is
  // still intact; the packet goes back and the send is counted down even if
  // a user's signal throws, so that wait_drained still returns
  struct finish_t {
    device_impl_t* dev;
    packet_t* p;
    bool counted = true;  // false: a peer failure counted it down already
    ~finish_t()
    {
      packet_pool_impl_t::put(p);
      // release: whoever sees the count drop (test_drained) sees the signal
      if (counted) dev->nsends_pending.fetch_sub(1, std::memory_order_release);
    }
  } finish{dev, p};
  if (sc) {
    // not linked: a peer failure signalled it already
    const bool mine = unlink(dev, sc);
    finish.counted = mine;
    comp_impl_t* comp = sc->comp;
    status_t status = sc->status;
    delete sc;
    if (mine) comp->signal(status);
  }
}

}  // namespace lci
