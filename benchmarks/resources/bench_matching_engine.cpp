// Matching-engine throughput (paper 4.1.3, Figure 5 style): each thread
// inserts a send and then the receive that matches it, on keys of its own
// (rank = thread index, tag cycling over 1,024 values), into one shared
// engine with the default 65,536 buckets. One op = one pair (two inserts).
//
//   pair    one entry per key at a time: the fixed arrays, one cache line
//   burst4  four sends then four receives per key: the second entries and
//           the overflow list (node pool) too
//
// Usage: bench_matching_engine [--threads 1,2,4,8] [--ops N] [--runs 5]
#include <cstdint>
#include <cstdio>

#include "harness.hpp"
#include "resource/matching_engine.hpp"

namespace
{
using engine_t = lci::matching_engine_impl_t;
using type_t = engine_t::type_t;
constexpr uint64_t kTags = 1024;
}  // namespace

int main(int argc, char** argv)
{
  bench::options_t o = bench::parse(argc, argv, "matching engine pairs");
  bench::print_header();
  lci::matching_engine_attr_t attr;
  attr.num_buckets = 65536;
  long failures = 0;
  for (int n : o.threads) {
    engine_t me(attr);
    auto mops = bench::measure(o, n, [&](int t, long ops) {
      char sink[2];
      long bad = 0;
      for (long i = 0; i < ops; ++i) {
        auto k = engine_t::make_key(t, static_cast<lci::tag_t>(i & (kTags - 1)),
                                    lci::matching_policy_t::rank_tag);
        if (me.insert(k, &sink[0], type_t::send)) ++bad;
        if (me.insert(k, &sink[1], type_t::recv) != &sink[0]) ++bad;
      }
      if (bad) __atomic_add_fetch(&failures, bad, __ATOMIC_RELAXED);
    });
    bench::report("matching_engine", "pair", n, o.ops, mops);
  }
  for (int n : o.threads) {
    engine_t me(attr);
    auto mops = bench::measure(o, n, [&](int t, long ops) {
      char sink[8];
      long bad = 0;
      for (long i = 0; i + 4 <= ops; i += 4) {
        auto k = engine_t::make_key(
            t, static_cast<lci::tag_t>((i >> 2) & (kTags - 1)),
            lci::matching_policy_t::rank_tag);
        for (int j = 0; j < 4; ++j)
          if (me.insert(k, &sink[j], type_t::send)) ++bad;
        for (int j = 0; j < 4; ++j)
          if (me.insert(k, &sink[4 + j], type_t::recv) != &sink[j]) ++bad;
      }
      if (bad) __atomic_add_fetch(&failures, bad, __ATOMIC_RELAXED);
    });
    bench::report("matching_engine", "burst4", n, o.ops, mops);
  }
  if (failures) {
    std::fprintf(stderr, "bench_matching_engine: %ld wrong matches\n",
                 failures);
    return 1;
  }
  return 0;
}
