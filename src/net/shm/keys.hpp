// The registration table of the native shared-memory backend: which remote
// keys of a rank are live, and the bytes each covers. A put or get names the
// target's key and a virtual address; the initiator looks both up in the
// target's table before any byte moves (CMA writes straight into the
// target's memory, so the target has no chance to refuse), and refuses a key
// that is not registered there (deregistered, forged, of another process)
// and bytes outside the key's region.
//
// The table lives in a POSIX shared-memory segment per context (mode 0600),
// named "/lci-shm-<pid>-<nonce>-keys<n>" so that the cleanups of the device
// segments (lcrun's for killed ranks, the tests' checks) cover it too. Its
// owner writes it (register and deregister, under a mutex); every peer maps
// it read-only at its first device's connect and reads it without locks.
//
// Layout: a header, then a power-of-two array of 32-byte slots, open
// addressing with linear probing from a hash of the key. A slot holds
// {seq, key, base, size}; the owner writes one as a seqlock (seq odd while
// it changes), so a reader never takes a key with another region's bounds.
// Key 0 marks an empty slot (the end of a probe chain), kTomb a removed one
// (the chain goes on); a removal that ends a chain empties the tombstones
// before it. Keys are never 0 nor kTomb.
//
// Registrations beyond the table's capacity are not listed: the header
// counts them, and while any is live a key not found is let through (the
// check then covers only keys that are listed; docs/RELIABILITY.md).
#ifndef LCI_NET_SHM_KEYS_HPP
#define LCI_NET_SHM_KEYS_HPP

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

namespace lci::net::shm
{

// Creates the POSIX shared-memory segment `name` of `bytes` bytes, mode
// 0600 whatever the umask, and maps it read-write; throws fatal_error
// naming `call` and `what` (and unlinks the name) when it cannot.
char* create_segment(const std::string& name, size_t bytes, const char* call,
                     const char* what);

class key_table_t
{
 public:
  // Creates this rank's table (throws fatal_error when it cannot).
  key_table_t(int rank_me, int rank_n, uint64_t nonce);
  ~key_table_t();
  key_table_t(const key_table_t&) = delete;
  key_table_t& operator=(const key_table_t&) = delete;

  static constexpr uint64_t kMagic = 0x4c43492d6b657973ull;  // "LCI-keys"

  const std::string& name() const { return name_; }

  // Lists [base, base + size) under `key` (the owner's side).
  void add(uint64_t key, uint64_t base, uint64_t size);
  void remove(uint64_t key);

  // Maps rank r's table, named `name` (the peer's device address carries
  // it), unless done already; throws fatal_error when it cannot.
  void map_peer(int r, const std::string& name);

  // nullptr when rank r's table lists `key` with [addr, addr + size) inside
  // its region, else why not (a static string, for the initiator's error).
  const char* check(int r, uint64_t key, uint64_t addr, uint64_t size) const;

  // Unlinks the name once every peer has mapped the table.
  void try_unlink();

 private:
  int rank_me_, rank_n_;
  std::string name_;
  char* own_ = nullptr;
  size_t bytes_ = 0;
  bool unlinked_ = false;
  std::mutex mu_;      // the owner's writes; the peers' mappings
  uint64_t live_ = 0;  // listed (under mu_)
  std::unordered_set<uint64_t> unlisted_;  // beyond the table (under mu_)
  std::vector<const char*> peers_;         // mapped tables (atomic access)
};

}  // namespace lci::net::shm

#endif  // LCI_NET_SHM_KEYS_HPP
