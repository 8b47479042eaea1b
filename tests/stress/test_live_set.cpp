// The live sets (src/util/live_set.hpp) behind the handle checks: lookups
// are lock-free while other threads add and remove. Checked: a live entry
// is never reported missing by a concurrent lookup (through tombstone
// reuse, in-place compaction and growth), a removed one is never found by
// its own thread, a double remove throws, and churn does not make the set
// grow (the set's own count comes back to its start).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "util/live_set.hpp"

namespace
{

using lci::util::live_set_t;

TEST(LiveSet, AddRemoveCheck)
{
  live_set_t s;
  int a = 0, b = 0;
  EXPECT_FALSE(s.contains(&a));
  EXPECT_FALSE(s.contains(nullptr));
  s.add(&a);
  EXPECT_TRUE(s.contains(&a));
  EXPECT_FALSE(s.contains(&b));
  EXPECT_NO_THROW(s.check(&a, "call", "thing"));
  EXPECT_THROW(s.check(&b, "call", "thing"), lci::fatal_error);
  s.remove(&a, "call", "thing");
  EXPECT_FALSE(s.contains(&a));
  EXPECT_THROW(s.remove(&a, "call", "thing"), lci::fatal_error);
  EXPECT_THROW(s.remove(nullptr, "call", "thing"), lci::fatal_error);
  EXPECT_EQ(s.size(), 0u);
}

// Readers look up a fixed set of live entries while writers churn (each
// adds and removes its own entries, some held for a while so that the
// table grows and shrinks its live count): no live entry is ever missed.
TEST(LiveSet, ConcurrentLookupsDuringChurn)
{
  live_set_t s;
  constexpr int kKeep = 32;
  std::vector<std::unique_ptr<int>> keep;
  for (int i = 0; i < kKeep; ++i) {
    keep.push_back(std::make_unique<int>(i));
    s.add(keep.back().get());
  }
  std::atomic<bool> stop{false};
  std::atomic<long> misses{0}, lookups{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r)
    readers.emplace_back([&] {
      long n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (auto& p : keep) {
          if (!s.contains(p.get())) misses.fetch_add(1);
          ++n;
        }
      }
      lookups.fetch_add(n);
    });
  std::vector<std::thread> writers;
  std::atomic<long> own_errors{0};
  for (int w = 0; w < 3; ++w)
    writers.emplace_back([&, w] {
      std::vector<std::unique_ptr<char[]>> held;
      for (int round = 0; round < 20000; ++round) {
        auto obj = std::make_unique<char[]>(16);
        s.add(obj.get());
        if (!s.contains(obj.get())) own_errors.fetch_add(1);
        if ((round + w) % 7 == 0) {
          held.push_back(std::move(obj));  // stays live for a while
        } else {
          s.remove(obj.get(), "t", "x");
          if (s.contains(obj.get())) own_errors.fetch_add(1);
        }
        if (held.size() > 500) {
          for (auto& h : held) s.remove(h.get(), "t", "x");
          held.clear();
        }
      }
      for (auto& h : held) s.remove(h.get(), "t", "x");
    });
  for (auto& t : writers) t.join();
  stop.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(misses.load(), 0) << "of " << lookups.load() << " lookups";
  EXPECT_EQ(own_errors.load(), 0);
  EXPECT_GT(lookups.load(), 0);
  EXPECT_EQ(s.size(), static_cast<size_t>(kKeep));
  for (auto& p : keep) EXPECT_TRUE(s.contains(p.get()));
}

}  // namespace

// check()'s per-thread cache never vouches for a handle freed before the
// check: a thread checks an object (now cached), another thread frees it,
// and the first thread, told of the free, must get the error; re-adding it
// makes it live again. Also two sets never answer for each other.
TEST(LiveSet, CacheSeesFreesOfOtherThreads)
{
  lci::util::live_set_t set, other;
  int objects[2];
  set.add(&objects[0]);
  set.add(&objects[1]);
  other.add(&objects[1]);
  for (int round = 0; round < 200; ++round) {
    ASSERT_NO_THROW(set.check(&objects[0], "test", "object"));
    ASSERT_NO_THROW(set.check(&objects[0], "test", "object"));  // cached
    std::thread freer([&] { set.remove(&objects[0], "test", "object"); });
    freer.join();  // the free happens before the next check
    EXPECT_THROW(set.check(&objects[0], "test", "object"), lci::fatal_error);
    set.add(&objects[0]);
    ASSERT_NO_THROW(set.check(&objects[0], "test", "object"));
  }
  ASSERT_NO_THROW(other.check(&objects[1], "test", "object"));
  EXPECT_THROW(other.check(&objects[0], "test", "object"), lci::fatal_error);
}
