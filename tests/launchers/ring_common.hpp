// The ring exchange shared by ring.cpp and mpi_interop.cpp: on a live
// runtime, every rank sends messages of several sizes (around the inject and
// eager limits) to its right neighbour and receives them from its left one,
// checking every byte and status field; then a token goes once around the
// ring, each rank adding rank+1, and rank 0 checks the sum (which fails if
// two processes share a rank or the ring is broken). Throws on any mismatch.
#ifndef LCI_TESTS_LAUNCHERS_RING_COMMON_HPP
#define LCI_TESTS_LAUNCHERS_RING_COMMON_HPP

#include <cstdint>
#include <cstdio>
#include <lci.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace ring
{

inline unsigned char pattern(int src, int round, std::size_t msg, std::size_t i)
{
  return static_cast<unsigned char>(src * 131 + round * 29 + msg * 7 + i * 3 +
                                    1);
}

inline void require(bool ok, const std::string& what)
{
  if (!ok) throw std::runtime_error("check failed: " + what);
}

// Posts until the call is not retry, making progress in between.
template <typename Op>
lci::status_t post(const Op& op)
{
  for (;;) {
    lci::status_t s = op();
    if (!s.is_retry()) return s;
    lci::progress();
  }
}

// One ring exchange on the global runtime; `round` varies the payloads.
inline void exchange(int round)
{
  const int rank = lci::get_rank_me();
  const int n = lci::get_rank_n();
  const int right = (rank + 1) % n;
  const int left = (rank + n - 1) % n;
  const std::size_t inject = lci::get_g_runtime().get_attr_max_inject_size();
  const std::size_t eager = lci::get_max_bcopy_size();
  const std::vector<std::size_t> sizes = {1,          8,    inject,
                                          inject + 1, 1000, eager};

  std::vector<std::vector<unsigned char>> in(sizes.size());
  lci::comp_t rsync =
      lci::alloc_sync_x().threshold(static_cast<int>(sizes.size()))();
  for (std::size_t m = 0; m < sizes.size(); ++m) {
    in[m].assign(sizes[m], 0);
    lci::tag_t tag = static_cast<lci::tag_t>(round * 100 + m);
    lci::status_t s = post([&] {
      return lci::post_recv(left, in[m].data(), sizes[m], tag, rsync);
    });
    if (s.is_done()) lci::comp_signal(rsync, s);
  }
  std::vector<std::vector<unsigned char>> out(sizes.size());
  for (std::size_t m = 0; m < sizes.size(); ++m) {
    out[m].resize(sizes[m]);
    for (std::size_t i = 0; i < sizes[m]; ++i)
      out[m][i] = pattern(rank, round, m, i);
    lci::tag_t tag = static_cast<lci::tag_t>(round * 100 + m);
    // COMP_NULL: blocks until the buffer may be reused
    post([&] {
      return lci::post_send(right, out[m].data(), sizes[m], tag,
                            lci::COMP_NULL);
    });
  }
  std::vector<lci::status_t> st(sizes.size());
  lci::sync_wait(rsync, st.data());
  lci::free_comp(&rsync);
  for (const lci::status_t& s : st) {
    std::size_t m = static_cast<std::size_t>(s.tag) - round * 100;
    require(m < sizes.size(), "tag " + std::to_string(s.tag));
    require(s.rank == left, "message from rank " + std::to_string(s.rank) +
                                ", expected " + std::to_string(left));
    require(s.size == sizes[m], "size " + std::to_string(s.size) +
                                    ", expected " + std::to_string(sizes[m]));
    for (std::size_t i = 0; i < sizes[m]; ++i) {
      require(in[m][i] == pattern(left, round, m, i),
              "byte " + std::to_string(i) + " of message " + std::to_string(m) +
                  " from rank " + std::to_string(left));
    }
  }

  // the token: rank 0 starts it with 0; everyone adds rank + 1
  const lci::tag_t token_tag = 1000000 + round;
  std::uint64_t token = 0;
  if (rank != 0) {
    post([&] {
      return lci::post_recv(left, &token, sizeof(token), token_tag,
                            lci::COMP_NULL);
    });
  }
  token += static_cast<std::uint64_t>(rank) + 1;
  post([&] {
    return lci::post_send(right, &token, sizeof(token), token_tag,
                          lci::COMP_NULL);
  });
  if (rank == 0) {
    std::uint64_t back = 0;
    post([&] {
      return lci::post_recv(left, &back, sizeof(back), token_tag,
                            lci::COMP_NULL);
    });
    std::uint64_t expected = static_cast<std::uint64_t>(n) * (n + 1) / 2;
    require(back == expected, "the token came back as " + std::to_string(back) +
                                  ", expected " + std::to_string(expected));
  }
}

}  // namespace ring

#endif  // LCI_TESTS_LAUNCHERS_RING_COMMON_HPP
