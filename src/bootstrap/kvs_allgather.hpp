// Internal: allgather over a PMI key-value space, shared by the PMI-1 and
// PMI-2 clients. Every rank puts its blob (hex-encoded, split into chunks
// that fit one value) under keys "lci<seq>-<rank>-<chunk>", then one fence,
// then each rank reads the other ranks' chunks. `seq` is a process-wide
// sequence number, so keys are never reused.
//
// Cost per rank: ceil(2*size/chunk) puts, one fence, (rank_n - 1) * chunks
// gets; no pair of ranks ever talks directly.
#ifndef LCI_BOOTSTRAP_KVS_ALLGATHER_HPP
#define LCI_BOOTSTRAP_KVS_ALLGATHER_HPP

#include <cstddef>
#include <string>

namespace lci::bootstrap::kvs
{

std::string to_hex(const void* data, std::size_t size);
// Decodes `hex` into exactly `size` bytes; false if malformed.
bool from_hex(const std::string& hex, void* out, std::size_t size);

// The next allgather sequence number of this process.
unsigned long next_seq();

std::string make_key(unsigned long seq, int rank, std::size_t chunk);

// The operations a KVS offers; `get` returns the value or throws.
class store_t
{
 public:
  virtual ~store_t() = default;
  virtual void put(const std::string& key, const std::string& value) = 0;
  virtual void fence() = 0;
  virtual std::string get(int rank, const std::string& key) = 0;
};

// Allgather of `size` bytes per rank through `store`. `chunk_len` is the
// number of hex characters per value (>= 2). `who` names the backend in
// errors. `in` may alias part of `out`.
void allgather(store_t& store, const std::string& who, int rank_me, int rank_n,
               std::size_t chunk_len, const void* in, void* out,
               std::size_t size);

}  // namespace lci::bootstrap::kvs

#endif  // LCI_BOOTSTRAP_KVS_ALLGATHER_HPP
