#include "core/control.hpp"

#include <array>
#include <cstring>

#include "core/peer_failure.hpp"
#include "core/send_comp.hpp"
#include "resource/device.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

error_t send_in_packet(device_impl_t* dev, packet_pool_impl_t* pool, int rank,
                       const void* head, size_t hlen, const void* body,
                       size_t blen)
{
  if (!pool) pool = dev->pool;
  packet_t* p = pool->get();
  if (!p) return errorcode_t::retry_nopacket;
  std::memcpy(p->data(), head, hlen);
  if (blen) std::memcpy(p->data() + hlen, body, blen);
  error_t e = post_packet(dev, rank, p, hlen + blen, nullptr, status_t());
  if (e.is_retry()) packet_pool_impl_t::put(p);
  return e;
}

error_t try_send_control(device_impl_t* dev, packet_pool_impl_t* pool, int rank,
                         const msg_header_t& hdr, const void* payload,
                         size_t size)
{
  return send_small(dev, pool, rank, &hdr, sizeof(hdr), payload, size);
}

void send_control(device_impl_t* dev, int rank, const msg_header_t& hdr,
                  const void* payload, size_t size)
{
  if (size > kMaxControlPayload)
    util::throw_fatal("internal: a ", size, "-byte control message");
  // behind anything already queued, so that the backlog keeps its order
  if (dev->backlog.empty()) {
    error_t e = try_send_control(dev, nullptr, rank, hdr, payload, size);
    if (!e.is_retry()) return;
  }
  std::array<char, kMaxControlPayload> copy;
  if (size) std::memcpy(copy.data(), payload, size);
  dev->backlog.push([dev, rank, hdr, copy, size]() -> error_t {
    // nobody waits for a control message to a failed rank
    if (peer_is_failed(dev->runtime, rank)) return errorcode_t::done;
    return try_send_control(dev, nullptr, rank, hdr, copy.data(), size);
  });
}

}  // namespace lci
