#include "core/send_comp.hpp"

namespace lci
{
namespace
{

// What a send with comp_semantic network signals when the network is done.
struct send_comp_t {
  comp_impl_t* comp;
  status_t status;
};

}  // namespace

error_t post_packet(device_impl_t* dev, int rank, packet_t* p, size_t wire,
                    comp_impl_t* comp, const status_t& status)
{
  if (comp) p->send_comp = new send_comp_t{comp, status};
  dev->nsends_pending.fetch_add(1, std::memory_order_relaxed);
  error_t e = comp ? dev->net->post_send_network(rank, p->data(), wire, p)
                   : dev->net->post_send(rank, p->data(), wire, p);
  if (e.is_retry()) {
    dev->nsends_pending.fetch_sub(1, std::memory_order_relaxed);
    delete static_cast<send_comp_t*>(p->send_comp);
    p->send_comp = nullptr;
  }
  return e;
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
    ~finish_t()
    {
      packet_pool_impl_t::put(p);
      // release: whoever sees the count drop (test_drained) sees the signal
      dev->nsends_pending.fetch_sub(1, std::memory_order_release);
    }
  } finish{dev, p};
  if (sc) {
    send_comp_t c = *sc;
    delete sc;
    c.comp->signal(c.status);
  }
}

}  // namespace lci
