// Allgather over a PMI key-value space (see kvs_allgather.hpp).
#include "kvs_allgather.hpp"

#include <atomic>
#include <stdexcept>

namespace lci::bootstrap::kvs
{
namespace
{

std::atomic<unsigned long> g_seq{0};

int hex_digit(char c)
{
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string to_hex(const void* data, std::size_t size)
{
  static const char digits[] = "0123456789abcdef";
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string hex(2 * size, '0');
  for (std::size_t i = 0; i < size; ++i) {
    hex[2 * i] = digits[bytes[i] >> 4];
    hex[2 * i + 1] = digits[bytes[i] & 0xf];
  }
  return hex;
}

bool from_hex(const std::string& hex, void* out, std::size_t size)
{
  if (hex.size() != 2 * size) return false;
  auto* bytes = static_cast<unsigned char*>(out);
  for (std::size_t i = 0; i < size; ++i) {
    int hi = hex_digit(hex[2 * i]);
    int lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    bytes[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return true;
}

unsigned long next_seq() { return g_seq.fetch_add(1); }

std::string make_key(unsigned long seq, int rank, std::size_t chunk)
{
  return "lci" + std::to_string(seq) + "-" + std::to_string(rank) + "-" +
         std::to_string(chunk);
}

void allgather(store_t& store, const std::string& who, int rank_me, int rank_n,
               std::size_t chunk_len, const void* in, void* out,
               std::size_t size)
{
  unsigned long seq = next_seq();
  // Encode first: `in` may alias part of `out`.
  std::string mine = to_hex(in, size);
  std::size_t nchunks = (mine.size() + chunk_len - 1) / chunk_len;
  for (std::size_t c = 0; c < nchunks; ++c) {
    store.put(make_key(seq, rank_me, c), mine.substr(c * chunk_len, chunk_len));
  }
  store.fence();
  auto* dest = static_cast<unsigned char*>(out);
  for (int r = 0; r < rank_n; ++r) {
    std::string hex;
    if (r == rank_me) {
      hex = mine;
    } else {
      try {
        for (std::size_t c = 0; c < nchunks; ++c) {
          hex += store.get(r, make_key(seq, r, c));
        }
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string(e.what()) + " [reading rank " +
                                 std::to_string(r) + "'s data in allgather #" +
                                 std::to_string(seq) + "]");
      }
    }
    if (!from_hex(hex, dest + static_cast<std::size_t>(r) * size, size)) {
      throw std::runtime_error(
          "lci bootstrap (" + who + "): allgather #" + std::to_string(seq) +
          ": rank " + std::to_string(r) + " published " +
          std::to_string(hex.size()) + " hex characters, expected " +
          std::to_string(2 * size) +
          " (do all ranks run the same program and LCI version?)");
    }
  }
}

}  // namespace lci::bootstrap::kvs
