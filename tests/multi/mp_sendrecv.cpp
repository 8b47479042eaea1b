// Multi-process check: every rank sends to every rank (itself included)
// send/recv messages and active messages of every protocol-boundary size
// (inject, eager, rendezvous),
// through the default device and through a second device, and checks every
// byte, every status field, and that each completion fires exactly once.
// Exit status 0 on success. Run with lcrun -n N.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <lci.hpp>
#include <vector>

namespace
{

int g_failures = 0;

#define CHECK(cond, ...)                                                \
  do {                                                                  \
    if (!(cond)) {                                                      \
      std::fprintf(stderr, "rank %d: check failed: %s: ", rank, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                \
      std::fprintf(stderr, "\n");                                       \
      ++g_failures;                                                     \
    }                                                                   \
  } while (0)

unsigned char pattern(int src, lci::tag_t tag, size_t i)
{
  return static_cast<unsigned char>(src * 61 + tag * 17 + i * 3 + 1);
}

void fill(std::vector<unsigned char>& buf, int src, lci::tag_t tag)
{
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = pattern(src, tag, i);
}

bool verify(const void* p, size_t size, int src, lci::tag_t tag)
{
  auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < size; ++i)
    if (b[i] != pattern(src, tag, i)) return false;
  return true;
}

// Post until not retry, making progress in between.
template <typename Op>
lci::status_t post(const Op& op, lci::device_t dev)
{
  for (;;) {
    lci::status_t s = op();
    if (!s.is_retry()) return s;
    lci::progress_x().device(dev)();
  }
}

void run_round(lci::device_t dev, const std::vector<size_t>& sizes, int round)
{
  const int rank = lci::get_rank_me();
  const int n = lci::get_rank_n();
  const int nsizes = static_cast<int>(sizes.size());

  // the active-message target: a cq registered in the same order everywhere
  lci::comp_t cq = lci::alloc_cq();
  lci::rcomp_t rcomp = lci::register_rcomp(cq);

  // receives: one per (source, size); a synchronizer counts them
  const int nrecv = n * nsizes;
  lci::comp_t rsync = lci::alloc_sync_x().threshold(nrecv)();
  std::vector<std::vector<unsigned char>> rbufs;
  rbufs.reserve(nrecv);  // user_context points at the elements
  int done_now = 0;
  for (int src = 0; src < n; ++src)
    for (int k = 0; k < nsizes; ++k) {
      lci::tag_t tag = round * 1000 + k;
      rbufs.emplace_back(sizes[k] + 8, 0);
      auto& b = rbufs.back();
      lci::status_t s = post(
          lci::post_comm_x(lci::direction_t::IN, src, b.data(), sizes[k], rsync)
              .tag(tag)
              .device(dev)
              .user_context(&b),
          dev);
      if (s.is_done()) {
        ++done_now;
        lci::comp_signal(rsync, s);
      }
    }
  (void)done_now;

  // sends and active messages to everyone
  lci::comp_t ssync = lci::alloc_counter();
  long posted = 0;
  std::vector<std::vector<unsigned char>> sbufs;
  sbufs.reserve(n * nsizes);
  for (int dst = 0; dst < n; ++dst)
    for (int k = 0; k < nsizes; ++k) {
      lci::tag_t tag = round * 1000 + k;
      sbufs.emplace_back(sizes[k]);
      fill(sbufs.back(), rank, tag);
      lci::status_t s =
          post(lci::post_send_x(dst, sbufs.back().data(), sizes[k], tag, ssync)
                   .device(dev),
               dev);
      if (s.is_posted()) ++posted;
      CHECK(s.is_done() || s.is_posted(), "send returned %s",
            s.error.get_str());
      s = post(lci::post_comm_x(lci::direction_t::OUT, dst, sbufs.back().data(),
                                sizes[k], ssync)
                   .remote_comp(rcomp)
                   .tag(tag)
                   .device(dev)
                   .allow_done(false),
               dev);
      CHECK(s.is_posted(), "allow_done(false) am returned %s",
            s.error.get_str());
      ++posted;
    }

  // wait for everything: receives, active messages and our own sends
  std::vector<lci::status_t> rst(nrecv);
  std::vector<lci::status_t> ams;
  bool rdone = false;
  while (!rdone || static_cast<int>(ams.size()) < nrecv ||
         lci::counter_get(ssync) < posted) {
    lci::progress_x().device(dev)();
    lci::status_t s = lci::cq_pop(cq);
    if (s.is_done()) ams.push_back(s);
    if (!rdone) rdone = lci::sync_test(rsync, rst.data());
  }
  CHECK(lci::counter_get(ssync) == posted, "local completions %ld vs %ld",
        static_cast<long>(lci::counter_get(ssync)), posted);

  // receives: payload, status fields, and exactly one per (source, tag)
  std::vector<int> seen(n * nsizes, 0);
  for (const lci::status_t& s : rst) {
    int k = static_cast<int>(s.tag - round * 1000);
    CHECK(s.rank >= 0 && s.rank < n && k >= 0 && k < nsizes,
          "bad recv status rank %d tag %llu", s.rank,
          static_cast<unsigned long long>(s.tag));
    if (!(s.rank >= 0 && s.rank < n && k >= 0 && k < nsizes)) continue;
    ++seen[s.rank * nsizes + k];
    CHECK(s.size == sizes[k], "recv size %zu, expected %zu", s.size, sizes[k]);
    auto* b = static_cast<std::vector<unsigned char>*>(s.user_context);
    CHECK(b && s.buffer == b->data(), "recv buffer/user_context mismatch");
    CHECK(verify(s.buffer, s.size, s.rank, s.tag),
          "recv payload from %d tag %llu", s.rank,
          static_cast<unsigned long long>(s.tag));
  }
  for (int i = 0; i < n * nsizes; ++i)
    CHECK(seen[i] == 1, "recv (src %d, size %zu) completed %d times",
          i / nsizes, sizes[i % nsizes], seen[i]);

  // active messages: same checks, and the buffer is ours to free
  std::vector<int> am_seen(n * nsizes, 0);
  for (const lci::status_t& s : ams) {
    int k = static_cast<int>(s.tag - round * 1000);
    bool ok = s.rank >= 0 && s.rank < n && k >= 0 && k < nsizes;
    CHECK(ok, "bad am status");
    if (ok) {
      ++am_seen[s.rank * nsizes + k];
      CHECK(s.size == sizes[k], "am size %zu, expected %zu", s.size, sizes[k]);
      CHECK(verify(s.buffer, s.size, s.rank, s.tag), "am payload");
      CHECK(s.user_context == nullptr, "am user_context");
    }
    std::free(s.buffer);
  }
  for (int i = 0; i < n * nsizes; ++i)
    CHECK(am_seen[i] == 1, "am (src %d, size %zu) arrived %d times", i / nsizes,
          sizes[i % nsizes], am_seen[i]);
  CHECK(lci::cq_pop(cq).is_retry(), "extra active messages");

  lci::deregister_rcomp(rcomp);
  lci::free_comp(&cq);
  lci::free_comp(&rsync);
  lci::free_comp(&ssync);
}

}  // namespace

int main()
{
  int rank = -1;
  try {
    lci::g_runtime_init();
    rank = lci::get_rank_me();
    size_t inject = lci::get_g_runtime().get_attr_max_inject_size();
    size_t eager = lci::get_max_bcopy_size();
    // up to the eager limit, and above it (rendezvous); 240 and 241 on
    // either side of the largest message native shm copies out of its ring
    // at the poll (kCopyMax with the 16-byte header), above which it lends
    // the message in place
    std::vector<size_t> sizes = {0,          1,         8,     inject,
                                 inject + 1, 240,       241,   1000,
                                 eager,      eager + 1, 65536, 1 << 20};

    run_round(lci::get_default_device(), sizes, 1);
    lci::device_t dev = lci::alloc_device();
    run_round(dev, sizes, 2);
    lci::free_device(&dev);

    std::printf("mp_sendrecv: rank %d of %d: %s (%d failures)\n", rank,
                lci::get_rank_n(), g_failures ? "FAILED" : "ok", g_failures);
    lci::g_runtime_fina();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mp_sendrecv: rank %d: %s\n", rank, e.what());
    return 1;
  }
  return g_failures ? 1 : 0;
}
