// Matches incoming sends with posted receives (paper 4.1.3). A key is made
// from (source rank, tag) restricted by the matching policy; insert() either
// stores the value (returns nullptr) or, when an entry of the complementary
// type waits under the same key, removes and returns it (oldest first).
//
// A hash table with a spinlock per bucket; each bucket holds a short list of
// per-key queues. Thread safety: any-thread; threads touching different
// buckets never contend.
#ifndef LCI_RESOURCE_MATCHING_ENGINE_HPP
#define LCI_RESOURCE_MATCHING_ENGINE_HPP

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "lci.hpp"
#include "util/spinlock.hpp"

namespace lci
{

class runtime_impl_t;

struct match_key_t {
  uint64_t tag;
  int32_t rank;
  uint32_t policy;
  bool operator==(const match_key_t& o) const
  {
    return tag == o.tag && rank == o.rank && policy == o.policy;
  }
};

class matching_engine_impl_t
{
 public:
  enum class type_t { send, recv };

  explicit matching_engine_impl_t(const matching_engine_attr_t& attr);

  static match_key_t make_key(int rank, tag_t tag, matching_policy_t policy)
  {
    bool use_rank = policy == matching_policy_t::rank_tag ||
                    policy == matching_policy_t::rank_only;
    bool use_tag = policy == matching_policy_t::rank_tag ||
                   policy == matching_policy_t::tag_only;
    return match_key_t{use_tag ? tag : 0, use_rank ? rank : 0,
                       static_cast<uint32_t>(policy)};
  }

  void* insert(const match_key_t& key, void* value, type_t type);

  // Removes every waiting entry, calling f(value, type) on each.
  template <typename F>
  void clear(F f)
  {
    for (size_t i = 0; i <= mask_; ++i) {
      util::spin_guard_t g(buckets_[i].lock);
      for (queue_t& q : buckets_[i].queues)
        for (void* v : q.values) f(v, q.type);
      buckets_[i].queues.clear();
    }
  }

  matching_engine_attr_t attr;
  runtime_impl_t* runtime = nullptr;
  uint32_t index = 0;  // its number in the runtime, carried by sends

 private:
  struct queue_t {
    match_key_t key;
    type_t type;  // the type of the entries waiting here
    std::deque<void*> values;
  };
  struct alignas(64) bucket_t {
    util::spinlock_t lock;
    std::vector<queue_t> queues;
  };

  std::unique_ptr<bucket_t[]> buckets_;
  size_t mask_;
};

}  // namespace lci

#endif  // LCI_RESOURCE_MATCHING_ENGINE_HPP
