// allocator_recycling_t (include/lci.hpp): free lists by size class.
//
// Each buffer is preceded by a 16-byte header: its class, a tag that says
// the buffer is ours, and the free list's link while the buffer is cached.
// The header keeps the 16-byte alignment of malloc.
#include <atomic>
#include <cstdint>
#include <lci.hpp>

#include "util/error.hpp"
#include "util/spinlock.hpp"

namespace lci
{

namespace
{

constexpr size_t kHeader = 16;
constexpr uint32_t kTag = 0x4c434941;      // "LCIA": handed out
constexpr uint32_t kTagFree = 0x4c434946;  // "LCIF": on a free list
constexpr unsigned kMinShift = 6;          // the smallest class: 64 bytes
// classes up to 2^kMaxShift bytes; larger buffers are not cached
constexpr unsigned kMaxShift = 40;
constexpr uint32_t kClasses = 1 + (kMaxShift - kMinShift) * 4;
constexpr uint32_t kUncached = kClasses;

struct header_t {
  uint32_t cls;
  uint32_t tag;
  header_t* next;
};
static_assert(sizeof(header_t) == kHeader,
              "the header keeps 16-byte alignment");

// The class of a request of `size` bytes, and its capacity: 64 bytes, then
// four steps per power of two (2^e + q * 2^(e-2), q = 1..4).
uint32_t class_of(size_t size, size_t* capacity)
{
  if (size <= (size_t(1) << kMinShift)) {
    *capacity = size_t(1) << kMinShift;
    return 0;
  }
  if (size > (size_t(1) << kMaxShift)) {
    *capacity = size;
    return kUncached;
  }
  const unsigned e = 63u - unsigned(__builtin_clzll(size - 1));
  const size_t base = size_t(1) << e;
  const unsigned step_shift = e - 2;
  const size_t q = (size - base + (size_t(1) << step_shift) - 1) >> step_shift;
  *capacity = base + (q << step_shift);
  return 1 + (e - kMinShift) * 4 + uint32_t(q - 1);
}

size_t capacity_of(uint32_t cls)
{
  if (cls == 0) return size_t(1) << kMinShift;
  const unsigned e = kMinShift + (cls - 1) / 4;
  const size_t q = (cls - 1) % 4 + 1;
  return (size_t(1) << e) + (q << (e - 2));
}

}  // namespace

struct allocator_recycling_t::impl_t {
  struct list_t {
    util::spinlock_t lock;
    header_t* head = nullptr;
  };
  list_t lists[kClasses];
  std::atomic<size_t> cached{0};
};

allocator_recycling_t::allocator_recycling_t(size_t max_cached_bytes)
    : impl_(new impl_t), max_cached_(max_cached_bytes)
{
}

allocator_recycling_t::~allocator_recycling_t()
{
  for (impl_t::list_t& l : impl_->lists) {
    while (header_t* h = l.head) {
      l.head = h->next;
      std::free(h);
    }
  }
}

void* allocator_recycling_t::allocate(size_t size)
{
  size_t capacity;
  const uint32_t cls = class_of(size, &capacity);
  if (cls != kUncached) {
    impl_t::list_t& l = impl_->lists[cls];
    header_t* h;
    {
      util::spin_guard_t g(l.lock);
      h = l.head;
      if (h) l.head = h->next;
    }
    if (h) {
      impl_->cached.fetch_sub(capacity, std::memory_order_relaxed);
      h->tag = kTag;
      h->next = nullptr;
      return reinterpret_cast<char*>(h) + kHeader;
    }
  }
  if (capacity > SIZE_MAX - kHeader) return nullptr;
  header_t* h = static_cast<header_t*>(std::malloc(kHeader + capacity));
  if (!h) return nullptr;
  h->cls = cls;
  h->tag = kTag;
  h->next = nullptr;
  return reinterpret_cast<char*>(h) + kHeader;
}

void allocator_recycling_t::deallocate(void* ptr)
{
  if (!ptr) return;
  header_t* h = reinterpret_cast<header_t*>(static_cast<char*>(ptr) - kHeader);
  if (h->tag != kTag || h->cls > kUncached)
    util::throw_fatal(
        "allocator_recycling_t::deallocate: a buffer this allocator did not "
        "hand out (or one given back twice)");
  const uint32_t cls = h->cls;
  if (cls == kUncached) {
    h->tag = 0;
    std::free(h);
    return;
  }
  const size_t capacity = capacity_of(cls);
  // reserve room in the cache first, so that it never holds more than the
  // bound, whatever other threads give back meanwhile
  const size_t before =
      impl_->cached.fetch_add(capacity, std::memory_order_relaxed);
  if (before + capacity > max_cached_) {
    impl_->cached.fetch_sub(capacity, std::memory_order_relaxed);
    h->tag = 0;
    std::free(h);
    return;
  }
  impl_t::list_t& l = impl_->lists[cls];
  h->tag = kTagFree;
  util::spin_guard_t g(l.lock);
  h->next = l.head;
  l.head = h;
}

size_t allocator_recycling_t::cached_bytes() const
{
  return impl_->cached.load(std::memory_order_relaxed);
}

}  // namespace lci
