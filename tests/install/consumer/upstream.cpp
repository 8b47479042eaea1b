// A program written for upstream LCI 2's interface, built against the
// installed package: lct.h (argument parser, thread barrier, PMI wrapper),
// global default attributes, the rdv_protocol enum, reserved remote
// completions, endpoints and network contexts. One rank, no launcher; exit
// status 0 on success.
#include <getopt.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "lci.hpp"
#include "lct.h"

#define EXPECT(cond)                                          \
  do {                                                        \
    if (!(cond)) {                                            \
      std::fprintf(stderr, "upstream consumer: %s\n", #cond); \
      return 1;                                               \
    }                                                         \
  } while (0)

int main(int argc, char** argv)
{
  int nthreads = 2;
  int size = 100000;  // above the eager limit: a rendezvous
  LCT_args_parser_t parser = LCT_args_parser_alloc();
  LCT_args_parser_add(parser, "nthreads", required_argument, &nthreads);
  LCT_args_parser_add(parser, "size", required_argument, &size);
  LCT_args_parser_parse(parser, argc, argv);
  LCT_args_parser_print(parser, true);
  LCT_args_parser_free(parser);

  LCT_init();
  LCT_pmi_initialize();
  EXPECT(LCT_pmi_get_size() == 1);

  lci::global_initialize();
  lci::global_attr_t attr = lci::get_g_default_attr();
  attr.npackets = 1024;
  lci::set_g_default_attr(attr);
  lci::g_runtime_init_x().rdv_protocol(lci::attr_rdv_protocol_t::write)();
  lci::runtime_t rt = lci::get_g_runtime();
  EXPECT(rt.get_attr_rdv_protocol() == lci::attr_rdv_protocol_t::write);
  EXPECT(rt.get_attr_npackets() == 1024);
  EXPECT(lci::get_rank_me() == LCT_pmi_get_rank());
  EXPECT(!lci::get_default_net_context().is_empty());

  lci::endpoint_t ep = lci::alloc_endpoint();
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t first = lci::reserve_rcomps(nthreads);
  for (int i = 0; i < nthreads; ++i)
    lci::register_rcomp_x(cq).rcomp(first + i)();

  std::vector<char> buf(size, 'u');
  LCT_tbarrier_t barrier = LCT_tbarrier_alloc(nthreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < nthreads; ++i)
    threads.emplace_back([&, i] {
      LCT_tbarrier_arrive_and_wait(barrier);
      lci::status_t st;
      do {
        st =
            lci::post_am_x(0, buf.data(), buf.size(), lci::COMP_NULL, first + i)
                .endpoint(ep)();
        lci::progress();
      } while (st.is_retry());
    });
  int got = 0;
  bool ok = true;
  while (got < nthreads) {
    lci::status_t st = lci::cq_pop(cq);
    if (st.is_retry()) {
      lci::progress();
      continue;
    }
    ok = ok && st.is_done() && st.size == buf.size() &&
         std::memcmp(st.buffer, buf.data(), buf.size()) == 0;
    std::free(st.buffer);
    ++got;
  }
  for (auto& t : threads) t.join();
  EXPECT(ok);
  LCT_tbarrier_free(&barrier);
  lci::free_endpoint(&ep);
  lci::free_comp(&cq);
  lci::g_runtime_fina();
  lci::global_finalize();
  LCT_pmi_finalize();
  LCT_fina();
  std::printf("upstream consumer: %d active messages of %d bytes\n", nthreads,
              size);
  return 0;
}
