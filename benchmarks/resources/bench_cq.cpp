// Completion-queue benchmark (paper Figure 5): every thread repeatedly
// pushes one status into a shared queue and pops one (push+pop pairs), for
// both queue types. One CSV row per (type, path, thread count); the
// throughput counts pairs.
//
//   mode "<type>"      the queue object itself (signal + pop on the
//                      internal class, as progress and cq_pop use it)
//   mode "<type>-api"  through the public calls lci::comp_signal and
//                      lci::cq_pop
//
// After the rows, stderr gets the single-thread cost of a pair in thread
// CPU time (immune to other processes on a shared machine), as comments.
//
// Usage: bench_cq [--threads 1,2,4,8] [--ops N] [--runs R] [--no-pin]
#include <time.h>

#include <cstdio>
#include <string>

#include "comp/cq.hpp"
#include "harness.hpp"
#include "lci.hpp"

namespace
{

template <typename Q>
void pairs_direct(Q* q, int t, long ops)
{
  lci::status_t s(lci::errorcode_t::done);
  s.rank = t;
  long sum = 0;
  for (long i = 0; i < ops; ++i) {
    s.tag = static_cast<lci::tag_t>(i);
    q->push(s);
    lci::status_t r;
    do {
      r = q->pop_impl();
    } while (__builtin_expect(r.is_retry(), 0));
    sum += static_cast<long>(r.tag);
  }
  if (sum == -1) std::printf("unreachable\n");  // keep the loop
}

void pairs_api(lci::comp_t cq, int t, long ops)
{
  lci::status_t s(lci::errorcode_t::done);
  s.rank = t;
  long sum = 0;
  for (long i = 0; i < ops; ++i) {
    s.tag = static_cast<lci::tag_t>(i);
    lci::comp_signal(cq, s);
    lci::status_t r;
    do {
      r = lci::cq_pop(cq);
    } while (__builtin_expect(r.is_retry(), 0));
    sum += static_cast<long>(r.tag);
  }
  if (sum == -1) std::printf("unreachable\n");
}

double thread_cpu_ns()
{
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv)
{
  bench::options_t o = bench::parse(
      argc, argv, "bench_cq: push+pop pairs on a shared completion queue");
  bench::print_header();
  for (const char* type : {"array", "lcrq"}) {
    for (bool api : {false, true}) {
      std::string mode = std::string(type) + (api ? "-api" : "");
      for (int n : o.threads) {
        lci::comp_t cq = lci::alloc_cq_x().cq_type(type)();
        lci::comp_impl_t* impl = cq.get_impl();
        auto mops = bench::measure(o, n, [&](int t, long ops) {
          if (api)
            pairs_api(cq, t, ops);
          else if (std::string(type) == "array")
            pairs_direct(static_cast<lci::array_cq_t*>(impl), t, ops);
          else
            pairs_direct(static_cast<lci::lcrq_cq_t*>(impl), t, ops);
        });
        bench::report("cq_push_pop", mode.c_str(), n, o.ops, mops);
        lci::free_comp(&cq);
      }
    }
  }
  for (const char* type : {"array", "lcrq"}) {
    for (bool api : {false, true}) {
      lci::comp_t cq = lci::alloc_cq_x().cq_type(type)();
      lci::comp_impl_t* impl = cq.get_impl();
      double best = 1e30;
      for (int run = 0; run <= o.runs; ++run) {
        double t0 = thread_cpu_ns();
        if (api)
          pairs_api(cq, 0, o.ops);
        else if (std::string(type) == "array")
          pairs_direct(static_cast<lci::array_cq_t*>(impl), 0, o.ops);
        else
          pairs_direct(static_cast<lci::lcrq_cq_t*>(impl), 0, o.ops);
        double ns = (thread_cpu_ns() - t0) / static_cast<double>(o.ops);
        if (run > 0 && ns < best) best = ns;  // run 0 warms up
      }
      std::fprintf(stderr,
                   "# %s%s: 1 thread, %.2f ns per push+pop pair "
                   "(thread CPU time, best of %d)\n",
                   type, api ? "-api" : "", best, o.runs);
      lci::free_comp(&cq);
    }
  }
  return 0;
}
