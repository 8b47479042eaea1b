// The k-mer counting application (the LCI paper, Section 5.3): what the LCI
// program (kmer_lci.cpp) and the MPI reference (kmer_mpi.cpp) share, so that
// the two differ only in how k-mers travel between ranks.
//
// The algorithm (HipMer's k-mer counting stage):
//   read   every rank reads every input file and keeps every R-th chunk of
//          records (R ranks); its threads parse the chunks (FASTQ or FASTA,
//          checked) into sequences of ACGT in which N stands for every base
//          that breaks k-mers;
//   bloom  every thread splits its share of the sequences into canonical
//          k-mers; each k-mer has one owner rank (a hash), which inserts it
//          into the first layer of a Bloom filter, or into the second layer
//          when the first already held it;
//   count  the same traffic again; the owner counts, in a hash table, the
//          k-mers that the second layer holds (those seen more than once);
//   histo  the number of distinct k-mers of each count, summed over ranks.
// Every k-mer of count >= 2 reaches the table on all of its occurrences (a
// Bloom filter has no false negatives), so those counts are exact; a k-mer
// seen once may pass the filter (a false positive) and is dropped, so the
// count-1 row is only an estimate unless --no-bloom counts every k-mer.
#ifndef LCI_APPS_KMER_COMMON_HPP
#define LCI_APPS_KMER_COMMON_HPP

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the k-mer wire format assumes a little-endian machine"
#endif

namespace kmer
{
using u128 = unsigned __int128;

constexpr int kMaxK = 63;

// ---- options ------------------------------------------------------------

struct options_t {
  int k = 0;
  int threads = 1;
  size_t agg_bytes = 8192;  // aggregation buffer per destination rank
  int qual_offset = 33;
  int min_qual = 0;  // bases of lower quality break k-mers
  bool bloom = true;
  double bloom_bits = 8;         // Bloom filter bits per k-mer occurrence
  uint64_t max_count = 10000;    // histogram: higher counts go to this row
  size_t chunk_bytes = 1 << 16;  // records handed out together
  double progress_secs = 5;      // 0: no progress lines
  size_t packet_size = 0;        // LCI only: 0 = chosen from agg_bytes
  std::string histo_path, plot_path, output_path;
  std::vector<std::string> files;
};

// Parses argv. Returns "" when the options are good, "help" for --help,
// else the error message. `lci_only` options are refused by the MPI program.
std::string parse_options(int argc, char** argv, bool lci, options_t* opt);
std::string usage(const char* prog, bool lci);

// ---- k-mers -------------------------------------------------------------

// 2 bits per base, A=0 C=1 G=2 T=3, the first base in the highest bits.
// On the wire a k-mer takes ceil(2k/8) bytes, little-endian.
inline int wire_bytes(int k) { return (2 * k + 7) / 8; }

// The n (1 to 8) little-endian bytes at p, and their store. Both go
// through whole 4- or 8-byte loads and stores of the buffer (overlapping
// when n is not 4 or 8), never through a copy of n bytes into a variable:
// reading that variable back whole would be a load wider than the stores
// that wrote it, which the processor cannot forward from its store buffer,
// so the load would wait for those stores to retire, and they retire only
// after the cache misses of the k-mers before it (the Bloom filter and the
// table). Every received k-mer would then wait for the previous one's
// misses instead of overlapping them.
inline uint64_t load_le(const uint8_t* p, int n)
{
  if (n == 8) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    return x;
  }
  if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + n - 4, 4);
    return a | (uint64_t(b) << (8 * (n - 4)));
  }
  return p[0] | (uint64_t(p[n / 2]) << (8 * (n / 2))) |
         (uint64_t(p[n - 1]) << (8 * (n - 1)));
}

inline void store_le(uint8_t* p, uint64_t x, int n)
{
  if (n == 8) {
    std::memcpy(p, &x, 8);
    return;
  }
  if (n >= 4) {
    uint32_t a = static_cast<uint32_t>(x);
    uint32_t b = static_cast<uint32_t>(x >> (8 * (n - 4)));
    std::memcpy(p, &a, 4);
    std::memcpy(p + n - 4, &b, 4);
    return;
  }
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(x >> (8 * i));
}

// A k-mer of `bytes` (1 to 16) bytes: above 8, the low 8 bytes and the
// high 8 (overlapping when bytes < 16).
inline void put_kmer(uint8_t* p, u128 v, int bytes)
{
  if (bytes <= 8) {
    store_le(p, static_cast<uint64_t>(v), bytes);
    return;
  }
  store_le(p, static_cast<uint64_t>(v), 8);
  store_le(p + bytes - 8, static_cast<uint64_t>(v >> (8 * (bytes - 8))), 8);
}

inline u128 get_kmer(const uint8_t* p, int bytes)
{
  if (bytes <= 8) return load_le(p, bytes);
  u128 hi = load_le(p + bytes - 8, 8);
  return load_le(p, 8) | (hi << (8 * (bytes - 8)));
}

inline uint64_t mix64(uint64_t x)
{
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

inline uint64_t hash_kmer(u128 v)
{
  uint64_t lo = static_cast<uint64_t>(v);
  uint64_t hi = static_cast<uint64_t>(v >> 64);
  return mix64(lo ^ mix64(hi + 0x9e3779b97f4a7c15ULL));
}

// The owner rank of a k-mer: the high half of the hash scaled to [0, n).
inline int owner_of(uint64_t h, int nranks)
{
  return static_cast<int>(((h >> 32) * static_cast<uint64_t>(nranks)) >> 32);
}

std::string kmer_to_string(u128 v, int k);

// Calls f(kmer) for every canonical k-mer of `seq` (ACGT, N breaks).
template <typename F>
inline void for_each_kmer(const std::string& seq, int k, F&& f)
{
  const u128 mask = (u128(1) << (2 * k)) - 1;
  const int top = 2 * (k - 1);
  u128 fwd = 0, rev = 0;
  int len = 0;
  for (char c : seq) {
    unsigned b;
    switch (c) {
      case 'A':
        b = 0;
        break;
      case 'C':
        b = 1;
        break;
      case 'G':
        b = 2;
        break;
      case 'T':
        b = 3;
        break;
      default:
        len = 0;
        continue;
    }
    fwd = ((fwd << 2) | b) & mask;
    rev = (rev >> 2) | (u128(3 - b) << top);
    if (++len >= k) f(fwd < rev ? fwd : rev);
  }
}

// ---- structures at the owner --------------------------------------------

// The owner of a k-mer: one rank, and within it one thread, so that only
// that thread ever touches the k-mer's Bloom filter words and table slot
// and the structures need no atomics or locks. The slot is the high half
// of the hash scaled to [0, nranks * nthreads); its rank is slot /
// nthreads, which is owner_of(h, nranks) whatever nthreads is, so the
// ranks' shares do not depend on the thread count.
inline int owner_thread(uint64_t h, int rank, int nranks, int nthreads)
{
  return owner_of(h, nranks * nthreads) - rank * nthreads;
}

// A Bloom filter whose bits for one key all lie in one 64-bit word (one
// cache line touched per insertion). One thread inserts.
class bloom_t
{
 public:
  void init(uint64_t nbits, uint64_t seed)
  {
    uint64_t words = 64;
    while (words * 64 < nbits) words *= 2;
    words_.assign(words, 0);
    shift_ = 64 - __builtin_ctzll(words);
    seed_ = seed;
  }
  // Sets the key's bits; true if they were all set already.
  bool insert(uint64_t h)
  {
    uint64_t x = mix64(h ^ seed_);
    uint64_t& w = words_[x >> shift_];
    uint64_t bits = bits_of(x);
    uint64_t old = w;
    w = old | bits;
    return (old & bits) == bits;
  }
  bool contains(uint64_t h) const
  {
    uint64_t x = mix64(h ^ seed_);
    uint64_t bits = bits_of(x);
    return (words_[x >> shift_] & bits) == bits;
  }

 private:
  static uint64_t bits_of(uint64_t x)
  {
    return (1ULL << (x & 63)) | (1ULL << ((x >> 6) & 63)) |
           (1ULL << ((x >> 12) & 63));
  }
  std::vector<uint64_t> words_;
  int shift_ = 58;
  uint64_t seed_ = 0;
};

// Counting hash table: shards of open addressing (linear probing); a count
// of 0 marks an empty slot. One thread adds.
class count_table_t
{
 public:
  struct entry_t {
    uint64_t lo, hi;
    uint64_t count;
  };

  explicit count_table_t(int nshards_log2 = 8)
      : shift_(nshards_log2), shards_(size_t(1) << nshards_log2)
  {
  }

  void add(u128 key, uint64_t h, uint64_t n = 1)
  {
    shard_t& s = shards_[h & (shards_.size() - 1)];
    if ((s.used + 1) * 10 > s.slots.size() * 7) grow(s);
    uint64_t lo = static_cast<uint64_t>(key);
    uint64_t hi = static_cast<uint64_t>(key >> 64);
    size_t mask = s.slots.size() - 1;
    for (size_t i = (h >> shift_) & mask;; i = (i + 1) & mask) {
      entry_t& e = s.slots[i];
      if (e.count == 0) {
        e = entry_t{lo, hi, n};
        ++s.used;
        return;
      }
      if (e.lo == lo && e.hi == hi) {
        e.count += n;
        return;
      }
    }
  }

  // f(key, count) for every entry.
  template <typename F>
  void for_each(F&& f) const
  {
    for (const shard_t& s : shards_)
      for (const entry_t& e : s.slots)
        if (e.count != 0) f((u128(e.hi) << 64) | e.lo, e.count);
  }

  size_t size() const
  {
    size_t n = 0;
    for (const shard_t& s : shards_) n += s.used;
    return n;
  }

 private:
  struct shard_t {
    std::vector<entry_t> slots;
    size_t used = 0;
  };

  void grow(shard_t& s)
  {
    std::vector<entry_t> old;
    old.swap(s.slots);
    s.slots.assign(old.empty() ? 1024 : old.size() * 2, entry_t{0, 0, 0});
    size_t mask = s.slots.size() - 1;
    for (const entry_t& e : old) {
      if (e.count == 0) continue;
      uint64_t h = hash_kmer((u128(e.hi) << 64) | e.lo);
      size_t i = (h >> shift_) & mask;
      while (s.slots[i].count != 0) i = (i + 1) & mask;
      s.slots[i] = e;
    }
  }

  int shift_;
  std::vector<shard_t> shards_;
};

// The owner's side of both passes for the k-mers one thread owns, used on
// its own k-mers and on every batch of k-mers it receives.
struct owner_t {
  bloom_t layer1, layer2;
  count_table_t table;
  bool use_bloom = true;

  void init(bool bloom, uint64_t bloom_bits)
  {
    use_bloom = bloom;
    if (bloom) {
      layer1.init(bloom_bits, 0x1f2e3d4c5b6a7988ULL);
      layer2.init(bloom_bits / 2, 0x8a7b6c5d4e3f2011ULL);
    }
  }

  // pass 1: returns true if the k-mer was new to the first layer
  bool insert_bloom(uint64_t h)
  {
    if (layer1.insert(h)) {
      layer2.insert(h);
      return false;
    }
    return true;
  }
  void insert_count(u128 v, uint64_t h)
  {
    if (!use_bloom || layer2.contains(h)) table.add(v, h);
  }
  void insert(int pass, u128 v, uint64_t h, uint64_t* fresh)
  {
    if (pass == 1)
      *fresh += insert_bloom(h);
    else
      insert_count(v, h);
  }
  // A batch as it travels: n k-mers of `bytes` bytes each. Returns the
  // number of k-mers new to the first layer (pass 1).
  uint64_t process(int pass, const uint8_t* p, size_t n, int bytes)
  {
    uint64_t fresh = 0;
    for (size_t i = 0; i < n; ++i, p += bytes) {
      u128 v = get_kmer(p, bytes);
      insert(pass, v, hash_kmer(v), &fresh);
    }
    return fresh;
  }
};

// ---- input --------------------------------------------------------------

// An error in the input: file and line (0: the file as a whole).
struct input_error : std::runtime_error {
  input_error(const std::string& file, uint64_t line, const std::string& what);
  int file_index = -1;
  uint64_t line = 0;
};

// Records handed out together, with where they start.
struct chunk_t {
  int file = 0;
  uint64_t first_line = 1;
  bool fastq = true;
  std::string text;
};

// Reads the input files in order (gzip or plain, through zlib) and cuts
// them into chunks of whole records of about `chunk_bytes`; chunk i goes to
// rank i % nranks. Every rank reads every file, so a rank's chunks are the
// same whatever the thread count. Thread-safe: next() takes a lock.
class reader_t
{
 public:
  reader_t(const std::vector<std::string>& files, size_t chunk_bytes, int rank,
           int nranks);
  ~reader_t();
  // The next chunk of this rank; false at the end. Throws input_error.
  bool next(chunk_t* out);
  uint64_t bytes_read() const { return bytes_read_.load(); }

 private:
  bool open_next();
  bool read_line(std::string* line);  // false at the end of the file
  [[noreturn]] void fail(uint64_t line, const std::string& what);

  std::mutex mutex_;
  std::vector<std::string> files_;
  size_t chunk_bytes_;
  int rank_, nranks_;
  int file_ = -1;
  void* gz_ = nullptr;  // gzFile
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  bool fastq_ = true;
  uint64_t line_ = 0;    // lines of the current file consumed
  uint64_t nchunk_ = 0;  // chunks cut so far, over all files
  std::string pending_;  // a line read but not yet in a chunk
  uint64_t pending_no_ = 0;
  bool has_pending_ = false;
  bool checked_ = false;  // every file could be opened
  std::atomic<uint64_t> bytes_read_{0};
  bool failed_ = false;
};

// What parsing a chunk gives: its reads, normalized (ACGT, N for every
// base that breaks k-mers), separated by N.
struct parsed_t {
  std::string seq;
  uint64_t reads = 0, bases = 0, kmers = 0;
};

// Checks and parses one chunk. Throws input_error naming file and line.
void parse_chunk(const chunk_t& c, const std::string& file,
                 const options_t& opt, parsed_t* out);

// ---- output -------------------------------------------------------------

// hist[c] = distinct k-mers seen c times (c <= max_count; the last row
// also holds every higher count); rows below `lowest` are not written.
void write_histo(const std::string& path, const std::vector<uint64_t>& hist,
                 uint64_t lowest);
// "k=31, reads.fq.gz" (and how many more files)
std::string plot_title(const options_t& opt);
// Draws the histogram with /usr/bin/python3 and matplotlib; "" or an error.
std::string plot_histo(const std::string& histo_path,
                       const std::string& png_path, const std::string& title);

// Progress lines on stderr for long phases (one thread of rank 0 calls it).
class progress_t
{
 public:
  void start(const char* phase, double every_secs);
  void tick(uint64_t done, uint64_t total, const char* unit);

 private:
  const char* phase_ = "";
  double every_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
};

double now_secs();

// Summary, phase times and histogram as both programs print them.
struct summary_t {
  const char* impl;
  int nranks, nthreads;
  uint64_t reads, bases, kmers, fresh, distinct;
  std::vector<std::pair<const char*, double>> phases;
  std::string note;  // a line of the implementation's own, if any
};
void print_summary(const options_t& opt, const summary_t& s,
                   const std::vector<uint64_t>& hist, uint64_t lowest);
// One rank's share of --output: its k-mers counted at least `lowest`
// times, "KMER COUNT" per line, into `path` (truncated when `first`, else
// appended). "" or the error.
std::string write_kmers(const std::string& path, bool first,
                        const count_table_t& table, int k, uint64_t lowest);
// Rank 0's output: the summary, then --histo and --plot if asked. Returns
// the exit status; an error is printed prefixed with `prog`.
int finish_output(const char* prog, const options_t& opt, const summary_t& s,
                  const std::vector<uint64_t>& hist, uint64_t lowest);

}  // namespace kmer

#endif
