#include "core/control.hpp"

#include <array>
#include <cstring>

#include "core/peer_failure.hpp"
#include "resource/device.hpp"
#include "resource/packet_pool.hpp"
#include "resource/runtime.hpp"
#include "util/error.hpp"

namespace lci
{

error_t try_send_control(device_impl_t* dev, packet_pool_impl_t* pool, int rank,
                         const msg_header_t& hdr, const void* payload,
                         size_t size)
{
  const size_t wire = sizeof(hdr) + size;
  if (wire <= dev->runtime->max_inject_wire) {
    alignas(16) char tmp[sizeof(msg_header_t) + kMaxControlPayload];
    std::memcpy(tmp, &hdr, sizeof(hdr));
    if (size) std::memcpy(tmp + sizeof(hdr), payload, size);
    return dev->net->post_inject(rank, tmp, wire);
  }
  if (!pool) pool = dev->pool;
  packet_t* p = pool->get();
  if (!p) return errorcode_t::retry_nopacket;
  std::memcpy(p->data(), &hdr, sizeof(hdr));
  if (size) std::memcpy(p->data() + sizeof(hdr), payload, size);
  dev->nsends_pending.fetch_add(1, std::memory_order_relaxed);
  error_t e = dev->net->post_send(rank, p->data(), wire, p);
  if (e.is_retry()) {
    dev->nsends_pending.fetch_sub(1, std::memory_order_relaxed);
    packet_pool_impl_t::put(p);
  }
  return e;
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
