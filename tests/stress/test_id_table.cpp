// util::id_table_t's claim operations (src/util/id_table.hpp), which decide
// between a peer failure and a late completion who ends an operation:
// take(id, p) and take_if(pred) hand each object to exactly one caller.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "util/id_table.hpp"

namespace
{

struct obj_t {
  int peer;
  uint32_t id = 0;
  std::atomic<int> claims{0};
};

TEST(IdTable, TakeOnceThenNever)
{
  lci::util::id_table_t<obj_t> t;
  obj_t a{1};
  a.id = t.add(&a);
  EXPECT_EQ(t.get(a.id), &a);
  EXPECT_TRUE(t.take(a.id, &a));
  EXPECT_FALSE(t.take(a.id, &a));
  EXPECT_EQ(t.get(a.id), nullptr);
  // the slot is reused with a new generation: the old id does not take it
  obj_t b{2};
  b.id = t.add(&b);
  EXPECT_NE(b.id, a.id);
  EXPECT_FALSE(t.take(a.id, &a));
  EXPECT_TRUE(t.take(b.id, &b));
  EXPECT_EQ(t.count_live(), 0u);
}

TEST(IdTable, TakeIfTakesOnlyMatchingObjects)
{
  lci::util::id_table_t<obj_t> t;
  std::vector<obj_t> objs(100);
  for (int i = 0; i < 100; ++i) {
    objs[i].peer = i % 4;
    objs[i].id = t.add(&objs[i]);
  }
  std::vector<obj_t*> got;
  t.take_if([](obj_t* o) { return o->peer == 2; }, &got);
  EXPECT_EQ(got.size(), 25u);
  for (obj_t* o : got) EXPECT_EQ(o->peer, 2);
  EXPECT_EQ(t.count_live(), 75u);
  for (auto& o : objs) EXPECT_EQ(t.take(o.id, &o), o.peer != 2);
}

// 4 threads end objects by id while 2 threads sweep them with take_if: every
// object is claimed exactly once.
TEST(IdTable, RacingTakeAndTakeIfClaimOnce)
{
  constexpr int kObjs = 20000;
  lci::util::id_table_t<obj_t> t;
  std::vector<obj_t> objs(kObjs);
  for (int i = 0; i < kObjs; ++i) {
    objs[i].peer = i % 2;
    objs[i].id = t.add(&objs[i]);
  }
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      while (!go.load()) std::this_thread::yield();
      for (int i = w; i < kObjs; i += 4)
        if (t.take(objs[i].id, &objs[i])) objs[i].claims.fetch_add(1);
    });
  for (int s = 0; s < 2; ++s)
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      for (int round = 0; round < 50; ++round) {
        std::vector<obj_t*> got;
        t.take_if([](obj_t* o) { return o->peer == 1; }, &got);
        for (obj_t* o : got) o->claims.fetch_add(1);
      }
    });
  go.store(true);
  for (auto& th : threads) th.join();
  for (auto& o : objs) EXPECT_EQ(o.claims.load(), 1);
  EXPECT_EQ(t.count_live(), 0u);
}

}  // namespace
