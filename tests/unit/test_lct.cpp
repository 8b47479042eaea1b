// lct.h, the parts of upstream LCI 2's tool library its examples and
// benchmarks use: argument parser, thread barrier, PMI wrapper (one rank
// here; tests/multi/mp_lct.cpp runs it across ranks).
#include <getopt.h>
#include <lct.h>

#include <atomic>
#include <thread>

#include "lci_test_common.hpp"

namespace
{

using ::testing::HasSubstr;

// argv for the parser from string literals
struct argv_t {
  std::vector<std::string> words;
  std::vector<char*> ptrs;
  explicit argv_t(std::initializer_list<const char*> w)
      : words(w.begin(), w.end())
  {
    for (auto& s : words) ptrs.push_back(&s[0]);
    ptrs.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(words.size()); }
  char** argv() { return ptrs.data(); }
};

TEST(Lct, ArgsParser)
{
  int nthreads = 16, niters = 1000, flag = 0, op = 0, untouched = 5;
  LCT_dict_str_int_t ops[] = {{"send", 1}, {"put", 2}};
  LCT_args_parser_t p = LCT_args_parser_alloc();
  LCT_args_parser_add(p, "nthreads", required_argument, &nthreads);
  LCT_args_parser_add(p, "niters", required_argument, &niters);
  LCT_args_parser_add(p, "verbose", no_argument, &flag);
  LCT_args_parser_add_dict(p, "op", required_argument, &op, ops, 2);
  LCT_args_parser_add(p, "window", required_argument, &untouched);
  argv_t a{"prog", "--nthreads", "4",       "--niters=7", "--verbose",
           "--op", "put",        "--other", "positional"};
  testing::internal::CaptureStderr();
  LCT_args_parser_parse(p, a.argc(), a.argv());
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(nthreads, 4);
  EXPECT_EQ(niters, 7);
  EXPECT_EQ(flag, 1);
  EXPECT_EQ(op, 2);
  EXPECT_EQ(untouched, 5);
  EXPECT_THAT(err, HasSubstr("unknown option --other"));
  testing::internal::CaptureStdout();
  LCT_args_parser_print(p, true);
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_THAT(out, HasSubstr("ArgsParser: nthreads = 4\n"));
  EXPECT_THAT(out, HasSubstr("ArgsParser: op = 2(put)\n"));
  testing::internal::CaptureStdout();
  LCT_args_parser_print(p, false);
  out = testing::internal::GetCapturedStdout();
  EXPECT_THAT(out, HasSubstr("\"exe\": \"prog\""));
  EXPECT_THAT(out, HasSubstr("\"op\": \"put\""));
  EXPECT_THAT(out, HasSubstr("\"niters\": 7"));
  LCT_args_parser_free(p);
}

TEST(LctDeathTest, ArgsParserBadValue)
{
  int n = 0;
  LCT_dict_str_int_t ops[] = {{"send", 1}};
  auto bad_value = [&] {
    LCT_args_parser_t p = LCT_args_parser_alloc();
    LCT_args_parser_add_dict(p, "op", required_argument, &n, ops, 1);
    argv_t a{"prog", "--op", "4x"};
    LCT_args_parser_parse(p, a.argc(), a.argv());
  };
  EXPECT_EXIT(bad_value(), ::testing::ExitedWithCode(EXIT_FAILURE),
              "--op 4x: not an integer nor one of send");
  auto no_value = [&] {
    LCT_args_parser_t p = LCT_args_parser_alloc();
    LCT_args_parser_add(p, "n", required_argument, &n);
    argv_t a{"prog", "--n"};
    LCT_args_parser_parse(p, a.argc(), a.argv());
  };
  EXPECT_EXIT(no_value(), ::testing::ExitedWithCode(EXIT_FAILURE),
              "--n needs a value");
  EXPECT_EXIT(LCT_tbarrier_alloc(0), ::testing::ExitedWithCode(EXIT_FAILURE),
              "0 threads");
}

// No thread passes a round before every thread arrived at it, over many
// rounds (the barrier is reused).
TEST(Lct, ThreadBarrier)
{
  constexpr int kThreads = 4, kRounds = 200;
  LCT_tbarrier_t b = LCT_tbarrier_alloc(kThreads);
  std::atomic<int> arrived{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int r = 0; r < kRounds; ++r) {
        arrived.fetch_add(1);
        LCT_tbarrier_arrive_and_wait(b);
        if (arrived.load() < (r + 1) * kThreads) errors.fetch_add(1);
        LCT_tbarrier_arrive_and_wait(b);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  // the split form: not passed until the last arrival
  LCT_tbarrier_t two = LCT_tbarrier_alloc(2);
  int64_t ticket = LCT_tbarrier_arrive(two);
  EXPECT_FALSE(LCT_tbarrier_test(two, ticket));
  int64_t other = LCT_tbarrier_arrive(two);
  EXPECT_EQ(other, ticket);
  EXPECT_TRUE(LCT_tbarrier_test(two, ticket));
  LCT_tbarrier_wait(two, ticket);
  LCT_tbarrier_free(&two);
  EXPECT_EQ(two, nullptr);
  LCT_tbarrier_free(&b);
}

// One process: rank 0 of 1; what it publishes it reads back after a
// barrier; a runtime allocated meanwhile sees the same ranks and leaves
// the wrapper initialized.
TEST(Lct, PmiOneRank)
{
  LCT_init();
  EXPECT_FALSE(LCT_pmi_initialized());
  LCT_pmi_initialize();
  ASSERT_TRUE(LCT_pmi_initialized());
  EXPECT_EQ(LCT_pmi_get_rank(), 0);
  EXPECT_EQ(LCT_pmi_get_size(), 1);
  char key[LCT_PMI_STRING_LIMIT] = "addr";
  char value[LCT_PMI_STRING_LIMIT] = "somewhere:1234";
  LCT_pmi_publish(key, value);
  LCT_pmi_barrier();
  char got[LCT_PMI_STRING_LIMIT] = "x";
  LCT_pmi_getname(0, key, got);
  EXPECT_STREQ(got, "somewhere:1234");
  char missing[LCT_PMI_STRING_LIMIT] = "none";
  LCT_pmi_getname(0, missing, got);
  EXPECT_STREQ(got, "");
  lci::g_runtime_init();
  EXPECT_EQ(lci::get_rank_me(), 0);
  EXPECT_EQ(lci::get_rank_n(), 1);
  lci::g_runtime_fina();
  EXPECT_TRUE(LCT_pmi_initialized());
  LCT_pmi_finalize();
  EXPECT_FALSE(LCT_pmi_initialized());
  LCT_fina();
}

TEST(LctDeathTest, PmiBadUse)
{
  EXPECT_EXIT(LCT_pmi_get_rank(), ::testing::ExitedWithCode(EXIT_FAILURE),
              "LCT_pmi_get_rank: LCT_pmi_initialize was not called");
  auto long_key = [] {
    LCT_pmi_initialize();
    std::string big(LCT_PMI_STRING_LIMIT, 'k');
    char v[] = "v";
    LCT_pmi_publish(&big[0], v);
  };
  EXPECT_EXIT(long_key(), ::testing::ExitedWithCode(EXIT_FAILURE),
              "LCT_pmi_publish: key is longer than 254 bytes");
  auto bad_rank = [] {
    LCT_pmi_initialize();
    char k[] = "k";
    char v[LCT_PMI_STRING_LIMIT];
    LCT_pmi_getname(3, k, v);
  };
  EXPECT_EXIT(bad_rank(), ::testing::ExitedWithCode(EXIT_FAILURE),
              "LCT_pmi_getname: rank 3 of 1");
}

}  // namespace
