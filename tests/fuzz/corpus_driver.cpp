// The main() of a fuzz target built without libFuzzer (any compiler), so
// that the normal test suite runs every harness: each file of the corpus
// directory, then `mutations` inputs made from them by seeded random
// mutations (bit flips, interesting values, truncation, growth, splicing).
// Deterministic for a given seed. A crash, a sanitizer report or an
// abort() of the harness fails the test.
//
//   <target> <corpus dir> [mutations = 4000] [seed = 1]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace
{

using bytes_t = std::vector<uint8_t>;

bytes_t read_file(const std::filesystem::path& p)
{
  std::ifstream in(p, std::ios::binary);
  return bytes_t(std::istreambuf_iterator<char>(in),
                 std::istreambuf_iterator<char>());
}

void mutate(bytes_t& b, const std::vector<bytes_t>& corpus,
            std::mt19937_64& rng)
{
  auto pick = [&](size_t n) { return n ? static_cast<size_t>(rng() % n) : 0; };
  static const uint64_t kInteresting[] = {
      0,      1,          0x7f,       0x80,       0xff,       0x7fff,
      0xffff, 0x7fffffff, 0xffffffff, 1ull << 24, 1ull << 48, ~0ull};
  const int n = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) {
    switch (rng() % 7) {
      case 0:  // flip a bit
        if (!b.empty()) b[pick(b.size())] ^= uint8_t(1u << (rng() % 8));
        break;
      case 1:  // a random byte
        if (!b.empty()) b[pick(b.size())] = static_cast<uint8_t>(rng());
        break;
      case 2: {  // an interesting 1, 2, 4 or 8-byte value, little-endian
        size_t w = size_t(1) << (rng() % 4);
        if (b.size() < w) break;
        uint64_t v = kInteresting[pick(std::size(kInteresting))];
        size_t at = pick(b.size() - w + 1);
        std::memcpy(b.data() + at, &v, w);
        break;
      }
      case 3:  // truncate
        b.resize(pick(b.size() + 1));
        break;
      case 4: {  // grow with random bytes
        size_t k = 1 + pick(64);
        for (size_t j = 0; j < k; ++j) b.push_back(static_cast<uint8_t>(rng()));
        break;
      }
      case 5: {  // splice: the tail of another corpus entry
        const bytes_t& o = corpus[pick(corpus.size())];
        if (o.empty()) break;
        size_t at = pick(b.size() + 1), from = pick(o.size());
        b.resize(at);
        b.insert(b.end(), o.begin() + static_cast<long>(from), o.end());
        break;
      }
      default: {  // duplicate a chunk
        if (b.empty()) break;
        size_t at = pick(b.size()),
               len = 1 + pick(std::min<size_t>(b.size() - at, 32));
        bytes_t chunk(b.begin() + static_cast<long>(at),
                      b.begin() + static_cast<long>(at + len));
        b.insert(b.begin() + static_cast<long>(pick(b.size() + 1)),
                 chunk.begin(), chunk.end());
        break;
      }
    }
  }
  if (b.size() > 65536) b.resize(65536);
}

}  // namespace

int main(int argc, char** argv)
{
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <corpus dir> [mutations] [seed]\n",
                 argv[0]);
    return 2;
  }
  const long mutations = argc > 2 ? std::atol(argv[2]) : 4000;
  const uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(argv[1]))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "%s: no corpus files in %s\n", argv[0], argv[1]);
    return 2;
  }
  std::vector<bytes_t> corpus;
  for (const auto& f : files) corpus.push_back(read_file(f));
  for (const bytes_t& b : corpus) LLVMFuzzerTestOneInput(b.data(), b.size());
  std::mt19937_64 rng(seed);
  for (long i = 0; i < mutations; ++i) {
    bytes_t b = corpus[static_cast<size_t>(rng() % corpus.size())];
    mutate(b, corpus, rng);
    LLVMFuzzerTestOneInput(b.data(), b.size());
  }
  std::printf("%s: %zu corpus inputs and %ld mutations (seed %llu): no crash\n",
              argv[0], corpus.size(), mutations,
              static_cast<unsigned long long>(seed));
  return 0;
}
