// Completion-queue benchmark (paper Figure 5): every thread repeatedly
// pushes one status into a queue and pops one (push+pop pairs), for both
// queue types. One CSV row per (type, path, sharing, thread count); the
// throughput counts pairs.
//
//   mode "<type>"      the queue object itself (signal + pop on the
//                      internal class, as progress and cq_pop use it)
//   mode "<type>-api"  through the public calls lci::comp_signal and
//                      lci::cq_pop
//   "...-shared"       all threads on one queue (every pair moves the
//                      queue's head and tail lines between cores)
//   "...-dedicated"    one queue per thread (the per-thread use of the
//                      scaling target)
//
// After the rows, stderr gets the single-thread cost of a pair in thread
// CPU time (immune to other processes on a shared machine), as comments.
//
// Usage: bench_cq [--threads 1,2,4,8] [--ops N] [--runs R] [--no-pin]
#include <time.h>

#include <cstdio>
#include <string>
#include <vector>

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
  bench::options_t o = bench::parse(argc, argv,
                                    "bench_cq: push+pop pairs on completion "
                                    "queues, one per thread or shared");
  bench::print_header();
  for (bool shared : {false, true}) {
    for (const char* type : {"array", "lcrq"}) {
      for (bool api : {false, true}) {
        std::string mode = std::string(type) + (api ? "-api" : "") +
                           (shared ? "-shared" : "-dedicated");
        for (int n : o.threads) {
          std::vector<lci::comp_t> cqs(shared ? 1 : n);
          for (auto& cq : cqs) cq = lci::alloc_cq_x().cq_type(type)();
          auto mops = bench::measure(o, n, [&](int t, long ops) {
            lci::comp_t cq = cqs[shared ? 0 : t];
            lci::comp_impl_t* impl = cq.get_impl();
            if (api)
              pairs_api(cq, t, ops);
            else if (std::string(type) == "array")
              pairs_direct(static_cast<lci::array_cq_t*>(impl), t, ops);
            else
              pairs_direct(static_cast<lci::lcrq_cq_t*>(impl), t, ops);
          });
          bench::report("cq_push_pop", mode.c_str(), n, o.ops, mops);
          for (auto& cq : cqs) lci::free_comp(&cq);
        }
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
