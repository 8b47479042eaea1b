// Memory the core hands to a backend's post_send and post_recv without a
// registration: the packet pools' slabs. A backend that needs a local
// registration for every buffer (ibv) registers such memory on first use;
// the core announces each region for as long as it lives, so that the
// backend registers exactly the region and drops the registration when
// the region goes, before its pages can be unmapped. A pinned
// registration that outlived its pages would keep the old physical pages:
// a later mapping at the same address (a new pool) would be read and
// written through the old ones, silently.
//
// Process-wide (packet pools are not tied to a runtime). Announcing and
// retiring happen at pool allocation and free, never on a fast path;
// find() is for a backend's registration miss.
#ifndef LCI_NET_REGIONS_HPP
#define LCI_NET_REGIONS_HPP

#include <cstddef>
#include <cstdint>

namespace lci::net
{

struct region_t {
  uintptr_t base = 0;
  size_t len = 0;
  uint64_t id = 0;  // never reused within the process
};

// Told when a region retires, before its memory is released.
class region_listener_t
{
 public:
  virtual ~region_listener_t() = default;
  virtual void region_retired(const region_t& r) = 0;
};

// Announces [base, base + len); returns its id.
uint64_t announce_region(const void* base, size_t len);
// Retires region `id`: every listener has dropped what it held of it on
// return.
void retire_region(uint64_t id);
// The live region holding [addr, addr + len), if any.
bool find_region(const void* addr, size_t len, region_t* out);
void add_region_listener(region_listener_t* l);
// On return the listener is never called again.
void remove_region_listener(region_listener_t* l);

}  // namespace lci::net

#endif  // LCI_NET_REGIONS_HPP
