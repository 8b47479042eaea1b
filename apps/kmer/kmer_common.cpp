// Options, input (FASTQ/FASTA through zlib), output and progress of the
// k-mer counting application; see kmer_common.hpp.
#include "kmer_common.hpp"

#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

namespace kmer
{

// ---- options ------------------------------------------------------------

std::string usage(const char* prog, bool lci)
{
  std::string u = std::string("usage: ") + prog +
                  " -k K [options] FILE...\n"
                  "Counts the canonical k-mers of FASTQ/FASTA reads (gzip or "
                  "plain) and prints the histogram of their counts.\n"
                  "  -k K               k-mer length, 1 to 63 (required)\n";
  if (lci)
    u += "  -t, --threads T    threads per process (default 1)\n";
  else
    u += "  -t, --threads 1    one thread per process (the reference)\n";
  u += "  -a, --agg BYTES    aggregation buffer per destination rank; K "
       "suffix: KiB\n"
       "                     (default 8K)\n"
       "  --qual-offset N    FASTQ quality offset, 33 or 64 (default 33; "
       "qualities\n"
       "                     must lie in [N, 126])\n"
       "  --min-qual Q       bases of quality below Q break k-mers "
       "(default 0)\n"
       "  --no-bloom         count every k-mer (exact count-1 row; more "
       "memory)\n"
       "  --bloom-bits B     Bloom filter bits per k-mer occurrence "
       "(default 8)\n"
       "  --max-count N      last histogram row; higher counts go there "
       "(default 10000)\n"
       "  --histo FILE       write the histogram (jellyfish histo format)\n"
       "  --plot FILE.png    draw the histogram on log axes (python3-"
       "matplotlib)\n"
       "  --output FILE      write the k-mers and their counts as text\n"
       "  --progress SECS    progress line every SECS on long phases "
       "(default 5, 0: off)\n"
       "  --chunk BYTES      input handed out in chunks of about BYTES "
       "(default 64K)\n";
  if (lci)
    u += "  --packet-size B    LCI packet size (default: fits one "
         "aggregation buffer\n"
         "                     up to 32 KiB, else the library's)\n";
  u += "  -h, --help         this help\n";
  return u;
}

namespace
{
bool parse_u64(const std::string& s, uint64_t* v, bool allow_k)
{
  if (s.empty() || s[0] == '-') return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str()) return false;
  std::string rest = end;
  if (allow_k && (rest == "K" || rest == "k" || rest == "KiB")) {
    if (x > (UINT64_MAX >> 10)) return false;
    x <<= 10;
    rest.clear();
  }
  if (!rest.empty()) return false;
  *v = x;
  return true;
}

bool parse_double(const std::string& s, double* v)
{
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !(x >= 0)) return false;
  *v = x;
  return true;
}
}  // namespace

std::string parse_options(int argc, char** argv, bool lci, options_t* opt)
{
  bool have_k = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], val;
    bool has_val = false;
    if (a.size() > 2 && a[0] == '-' && a[1] == '-') {
      size_t eq = a.find('=');
      if (eq != std::string::npos) {
        val = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_val = true;
      }
    }
    auto value = [&](std::string* out) -> bool {
      if (has_val) {
        *out = val;
        return true;
      }
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    auto bad = [&](const std::string& v) {
      return "bad value '" + v + "' for " + a;
    };
    std::string v;
    uint64_t u = 0;
    if (a == "-h" || a == "--help") return "help";
    if (a == "--no-bloom") {
      opt->bloom = false;
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      if (!value(&v)) return "missing the value of " + a;
      if (a == "-k") {
        if (!parse_u64(v, &u, false) || u < 1 || u > kMaxK)
          return "-k must be 1 to 63, not '" + v + "'";
        opt->k = static_cast<int>(u);
        have_k = true;
      } else if (a == "-t" || a == "--threads") {
        if (!parse_u64(v, &u, false) || u < 1 || u > 1024) return bad(v);
        if (!lci && u != 1)
          return "the MPI reference runs one thread per process (-t 1); "
                 "start more processes instead";
        opt->threads = static_cast<int>(u);
      } else if (a == "-a" || a == "--agg") {
        if (!parse_u64(v, &u, true) || u < 16 || u > (64u << 20))
          return bad(v) + " (16 bytes to 64 MiB)";
        opt->agg_bytes = u;
      } else if (a == "--qual-offset") {
        if (v != "33" && v != "64") return bad(v) + " (33 or 64)";
        opt->qual_offset = std::atoi(v.c_str());
      } else if (a == "--min-qual") {
        if (!parse_u64(v, &u, false) || u > 93) return bad(v) + " (0 to 93)";
        opt->min_qual = static_cast<int>(u);
      } else if (a == "--bloom-bits") {
        double d;
        if (!parse_double(v, &d) || d < 1 || d > 64)
          return bad(v) + " (1 to 64)";
        opt->bloom_bits = d;
      } else if (a == "--max-count") {
        if (!parse_u64(v, &u, false) || u < 2 || u > (1u << 26))
          return bad(v) + " (2 to 67108864)";
        opt->max_count = u;
      } else if (a == "--histo") {
        opt->histo_path = v;
      } else if (a == "--plot") {
        opt->plot_path = v;
      } else if (a == "--output") {
        opt->output_path = v;
      } else if (a == "--progress") {
        if (!parse_double(v, &opt->progress_secs)) return bad(v);
      } else if (a == "--chunk") {
        if (!parse_u64(v, &u, true) || u < 1024 || u > (1u << 30))
          return bad(v) + " (1 KiB to 1 GiB)";
        opt->chunk_bytes = u;
      } else if (a == "--packet-size" && lci) {
        if (!parse_u64(v, &u, true) || u < 1024 || u > (1u << 24))
          return bad(v) + " (1 KiB to 16 MiB)";
        opt->packet_size = u;
      } else {
        return "unknown option " + a;
      }
      continue;
    }
    opt->files.push_back(argv[i]);
  }
  if (!have_k) return "-k K is required";
  if (opt->files.empty()) return "no input file";
  if (opt->agg_bytes < static_cast<size_t>(wire_bytes(opt->k)))
    return "--agg must hold at least one k-mer (" +
           std::to_string(wire_bytes(opt->k)) + " bytes)";
  return "";
}

// ---- k-mers -------------------------------------------------------------

std::string kmer_to_string(u128 v, int k)
{
  static const char kBase[] = "ACGT";
  std::string s(k, 'A');
  for (int i = k - 1; i >= 0; --i, v >>= 2) s[i] = kBase[v & 3];
  return s;
}

// ---- input --------------------------------------------------------------

namespace
{
std::string where(const std::string& file, uint64_t line)
{
  return line ? file + ":" + std::to_string(line) : file;
}

bool blank(const std::string& s)
{
  for (char c : s)
    if (c != ' ' && c != '\t') return false;
  return true;
}
}  // namespace

input_error::input_error(const std::string& file, uint64_t line,
                         const std::string& what)
    : std::runtime_error(where(file, line) + ": " + what), line(line)
{
}

reader_t::reader_t(const std::vector<std::string>& files, size_t chunk_bytes,
                   int rank, int nranks)
    : files_(files), chunk_bytes_(chunk_bytes), rank_(rank), nranks_(nranks)
{
}

reader_t::~reader_t()
{
  if (gz_) gzclose(static_cast<gzFile>(gz_));
}

void reader_t::fail(uint64_t line, const std::string& what)
{
  failed_ = true;
  input_error e(files_[file_], line, what);
  e.file_index = file_;
  throw e;
}

bool reader_t::open_next()
{
  if (file_ + 1 >= static_cast<int>(files_.size())) return false;
  ++file_;
  line_ = 0;
  buf_.clear();
  pos_ = 0;
  eof_ = false;
  has_pending_ = false;
  errno = 0;
  gzFile gz = gzopen(files_[file_].c_str(), "rb");
  if (!gz)
    fail(0, std::string("cannot open: ") +
                (errno ? std::strerror(errno) : "out of memory"));
  gz_ = gz;
  gzbuffer(gz, 1 << 17);
  // the first line with text says the format
  std::string line;
  while (read_line(&line))
    if (!blank(line)) break;
  if (line.empty() || blank(line))
    fail(0, "empty file (no FASTQ or FASTA record)");
  if (line[0] == '@')
    fastq_ = true;
  else if (line[0] == '>')
    fastq_ = false;
  else
    fail(line_,
         "not FASTQ or FASTA: the first record must start with '@' or '>'");
  pending_ = line;
  pending_no_ = line_;
  has_pending_ = true;
  return true;
}

bool reader_t::read_line(std::string* line)
{
  for (;;) {
    const char* start = buf_.data() + pos_;
    const void* nl = std::memchr(start, '\n', buf_.size() - pos_);
    if (nl || eof_) {
      size_t len =
          nl ? static_cast<const char*>(nl) - start : buf_.size() - pos_;
      if (!nl && len == 0) return false;
      line->assign(start, len);
      pos_ += len + (nl ? 1 : 0);
      if (!line->empty() && line->back() == '\r') line->pop_back();
      ++line_;
      return true;
    }
    buf_.erase(0, pos_);
    pos_ = 0;
    size_t have = buf_.size();
    const size_t kRead = 1 << 20;
    buf_.resize(have + kRead);
    gzFile gz = static_cast<gzFile>(gz_);
    int n = gzread(gz, &buf_[have], kRead);
    int errnum = Z_OK;
    const char* msg = gzerror(gz, &errnum);
    if (n < 0 || (errnum != Z_OK && errnum != Z_BUF_ERROR)) {
      buf_.resize(have);
      fail(line_ + 1, std::string("read error: ") +
                          (errnum == Z_ERRNO ? std::strerror(errno) : msg));
    }
    if (errnum == Z_BUF_ERROR) {
      buf_.resize(have);
      fail(line_ + 1,
           "truncated gzip file (unexpected end of the compressed data)");
    }
    buf_.resize(have + n);
    bytes_read_.fetch_add(n, std::memory_order_relaxed);
    if (n == 0) eof_ = true;
  }
}

bool reader_t::next(chunk_t* out)
{
  std::lock_guard<std::mutex> guard(mutex_);
  if (failed_) return false;
  if (!checked_) {
    checked_ = true;
    for (size_t i = 0; i < files_.size(); ++i) {
      std::FILE* f = std::fopen(files_[i].c_str(), "rb");
      if (!f) {
        file_ = static_cast<int>(i);
        fail(0, std::string("cannot open: ") + std::strerror(errno));
      }
      std::fclose(f);
    }
  }
  std::string line;
  for (;;) {
    if (!gz_ && !open_next()) return false;
    const bool own = static_cast<int>(nchunk_ % nranks_) == rank_;
    out->file = file_;
    out->fastq = fastq_;
    out->text.clear();
    size_t size = 0;
    int pos = 0;  // FASTQ: line of the record (0: expecting a header)
    bool first = true;
    bool ended = false;
    out->first_line = has_pending_ ? pending_no_ : line_ + 1;
    for (;;) {
      if (fastq_ && pos == 0 && size >= chunk_bytes_) break;
      if (has_pending_) {
        line.swap(pending_);
        has_pending_ = false;
      } else if (!read_line(&line)) {
        ended = true;
        break;
      }
      if (fastq_) {
        if (pos != 0 || !blank(line)) pos = (pos + 1) & 3;
      } else if (!first && size >= chunk_bytes_ && !line.empty() &&
                 line[0] == '>') {
        pending_.swap(line);
        pending_no_ = line_;
        has_pending_ = true;
        break;
      }
      first = false;
      size += line.size() + 1;
      if (own) {
        out->text += line;
        out->text += '\n';
      }
    }
    if (ended) {
      gzclose(static_cast<gzFile>(gz_));
      gz_ = nullptr;
    }
    if (size == 0) continue;
    ++nchunk_;
    if (own) return true;
  }
}

namespace
{
// ACGT (either case) as themselves; N, '.' and the IUPAC ambiguity codes
// as N (they break k-mers); 0 for a character no sequence may hold.
struct base_table_t {
  char map[256] = {};
  base_table_t()
  {
    for (const char* p = "ACGT"; *p; ++p) map[int(*p)] = map[int(*p) + 32] = *p;
    for (const char* p = "NRYKMSWBDHV"; *p; ++p)
      map[int(*p)] = map[int(*p) + 32] = 'N';
    map[int('.')] = 'N';
  }
};
const base_table_t kBases;

std::string show_char(unsigned char c)
{
  char buf[32];
  if (c >= 33 && c < 127)
    std::snprintf(buf, sizeof buf, "'%c'", c);
  else
    std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
  return buf;
}

struct parser_t {
  const chunk_t& c;
  const std::string& file;
  const options_t& opt;
  parsed_t* out;
  std::string seq;

  [[noreturn]] void fail(uint64_t line, const std::string& what)
  {
    input_error e(file, line, what);
    e.file_index = c.file;
    throw e;
  }

  void add_bases(const std::string& line, uint64_t ln)
  {
    for (size_t i = 0; i < line.size(); ++i) {
      char b = kBases.map[static_cast<unsigned char>(line[i])];
      if (!b)
        fail(ln, "bad character " +
                     show_char(static_cast<unsigned char>(line[i])) +
                     " in a sequence (column " + std::to_string(i + 1) + ")");
      seq += b;
    }
  }

  void emit()
  {
    uint64_t run = 0;
    for (char b : seq) {
      run = (b == 'N') ? 0 : run + 1;
      if (run >= static_cast<uint64_t>(opt.k)) ++out->kmers;
    }
    out->reads += 1;
    out->bases += seq.size();
    out->seq += seq;
    out->seq += 'N';
    seq.clear();
  }

  void run()
  {
    const std::string& t = c.text;
    uint64_t ln = c.first_line - 1;
    uint64_t header = 0;
    int pos = 0;
    size_t seq_len = 0;
    bool in_record = false;
    std::string line;
    for (size_t at = 0; at < t.size();) {
      size_t nl = t.find('\n', at);
      line.assign(t, at, nl - at);
      at = nl + 1;
      ++ln;
      if (c.fastq) {
        switch (pos) {
          case 0:
            if (blank(line)) continue;
            if (line[0] != '@')
              fail(ln, "expected a FASTQ header line starting with '@'");
            header = ln;
            break;
          case 1:
            add_bases(line, ln);
            seq_len = line.size();
            break;
          case 2:
            if (line.empty() || line[0] != '+')
              fail(ln, "expected the '+' line of the FASTQ record of line " +
                           std::to_string(header));
            break;
          case 3:
            if (line.size() != seq_len)
              fail(ln, "quality length " + std::to_string(line.size()) +
                           " differs from the sequence length " +
                           std::to_string(seq_len));
            for (size_t i = 0; i < line.size(); ++i) {
              int q = static_cast<unsigned char>(line[i]);
              if (q < opt.qual_offset || q > 126)
                fail(ln, "quality " + show_char(q) + " (column " +
                             std::to_string(i + 1) +
                             ") out of range for offset " +
                             std::to_string(opt.qual_offset) +
                             (opt.qual_offset == 64 ? " (try --qual-offset 33)"
                                                    : ""));
              if (q - opt.qual_offset < opt.min_qual) seq[i] = 'N';
            }
            emit();
            break;
        }
        pos = (pos + 1) & 3;
      } else {
        if (blank(line) || line[0] == ';') continue;
        if (line[0] == '>') {
          if (in_record) emit();
          in_record = true;
          continue;
        }
        if (!in_record) fail(ln, "sequence before the first '>' header");
        add_bases(line, ln);
      }
    }
    if (c.fastq && pos != 0)
      fail(header, "truncated FASTQ record: " + std::to_string(pos) +
                       " of its 4 lines before the end of the file");
    if (in_record) emit();
  }
};
}  // namespace

void parse_chunk(const chunk_t& c, const std::string& file,
                 const options_t& opt, parsed_t* out)
{
  parser_t p{c, file, opt, out, {}};
  p.run();
}

// ---- output -------------------------------------------------------------

void write_histo(const std::string& path, const std::vector<uint64_t>& hist,
                 uint64_t lowest)
{
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f)
    throw std::runtime_error(path + ": cannot write: " + std::strerror(errno));
  for (size_t c = lowest; c < hist.size(); ++c)
    if (hist[c]) std::fprintf(f, "%zu %" PRIu64 "\n", c, hist[c]);
  if (std::fclose(f) != 0)
    throw std::runtime_error(path + ": write error: " + std::strerror(errno));
}

namespace
{
const char kPlotScript[] = R"PY(import sys
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("kmer: --plot needs matplotlib (apt-get install python3-matplotlib)")
xs, ys = [], []
with open(sys.argv[1]) as f:
    for line in f:
        c, n = line.split()
        xs.append(int(c))
        ys.append(int(n))
fig, ax = plt.subplots(figsize=(7, 4.5))
if xs:
    ax.loglog(xs, ys, marker=".", markersize=3, linewidth=0.8)
else:
    ax.text(0.5, 0.5, "no k-mer seen twice", ha="center", transform=ax.transAxes)
ax.set_xlabel("count (occurrences of a k-mer)")
ax.set_ylabel("distinct k-mers")
ax.set_title(sys.argv[3])
ax.grid(True, which="both", alpha=0.3)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=120)
)PY";
}  // namespace

std::string plot_title(const options_t& opt)
{
  std::string first = opt.files.empty() ? "" : opt.files[0];
  size_t slash = first.rfind('/');
  if (slash != std::string::npos) first = first.substr(slash + 1);
  std::string t = "k=" + std::to_string(opt.k) + ", " + first;
  if (opt.files.size() > 1)
    t += " and " + std::to_string(opt.files.size() - 1) + " more";
  return t;
}

std::string plot_histo(const std::string& histo_path,
                       const std::string& png_path, const std::string& title)
{
  const char* python = std::getenv("KMER_PYTHON");
  if (!python || !*python) python = "/usr/bin/python3";
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return std::string("fork: ") + std::strerror(errno);
  if (pid == 0) {
    execl(python, python, "-c", kPlotScript, histo_path.c_str(),
          png_path.c_str(), title.c_str(), static_cast<char*>(nullptr));
    std::fprintf(stderr, "kmer: cannot run %s: %s\n", python,
                 std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return png_path + ": plotting with " + python + " failed";
  return "";
}

double now_secs()
{
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void progress_t::start(const char* phase, double every_secs)
{
  phase_ = phase;
  every_ = every_secs;
  start_ = last_ = std::chrono::steady_clock::now();
}

void progress_t::tick(uint64_t done, uint64_t total, const char* unit)
{
  if (every_ <= 0) return;
  auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_).count() < every_) return;
  last_ = now;
  double t = std::chrono::duration<double>(now - start_).count();
  if (total)
    std::fprintf(stderr,
                 "kmer: %s: %" PRIu64 " of %" PRIu64
                 " %s of rank 0 (%.0f%%), %.1f s\n",
                 phase_, done, total, unit, 100.0 * done / total, t);
  else
    std::fprintf(stderr, "kmer: %s: %" PRIu64 " %s, %.1f s\n", phase_, done,
                 unit, t);
  std::fflush(stderr);
}

std::string write_kmers(const std::string& path, bool first,
                        const count_table_t& table, int k, uint64_t lowest)
{
  std::FILE* f = std::fopen(path.c_str(), first ? "w" : "a");
  if (!f) return path + ": cannot write: " + std::strerror(errno);
  table.for_each([&](u128 v, uint64_t c) {
    if (c >= lowest)
      std::fprintf(f, "%s %" PRIu64 "\n", kmer_to_string(v, k).c_str(), c);
  });
  if (std::fclose(f) != 0) return path + ": write error";
  return "";
}

int finish_output(const char* prog, const options_t& opt, const summary_t& s,
                  const std::vector<uint64_t>& hist, uint64_t lowest)
{
  print_summary(opt, s, hist, lowest);
  try {
    std::string histo = opt.histo_path;
    if (histo.empty() && !opt.plot_path.empty())
      histo = opt.plot_path + ".histo";
    if (!histo.empty()) write_histo(histo, hist, lowest);
    if (!opt.plot_path.empty()) {
      std::string err = plot_histo(histo, opt.plot_path, plot_title(opt));
      if (histo != opt.histo_path) std::remove(histo.c_str());
      if (!err.empty()) {
        std::fprintf(stderr, "%s: %s\n", prog, err.c_str());
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", prog, e.what());
    return 1;
  }
  return 0;
}

void print_summary(const options_t& opt, const summary_t& s,
                   const std::vector<uint64_t>& hist, uint64_t lowest)
{
  std::printf(
      "# kmer (%s): %d ranks x %d threads, k=%d, aggregation %zu B, "
      "%s\n",
      s.impl, s.nranks, s.nthreads, opt.k, opt.agg_bytes,
      opt.bloom ? "Bloom filter" : "no Bloom filter");
  if (!s.note.empty()) std::printf("# %s\n", s.note.c_str());
  std::printf("# input: %zu file%s, %" PRIu64 " reads, %" PRIu64
              " bases, %" PRIu64 " k-mers\n",
              opt.files.size(), opt.files.size() == 1 ? "" : "s", s.reads,
              s.bases, s.kmers);
  double total = 0;
  for (auto& p : s.phases) {
    std::printf("# time %-6s %.3f s\n", p.first, p.second);
    total += p.second;
  }
  std::printf("# time total  %.3f s\n", total);
  if (opt.bloom)
    std::printf("# distinct k-mers seen twice or more: %" PRIu64
                "; seen once (estimate from the Bloom filter): %" PRIu64 "\n",
                s.distinct, s.fresh > s.distinct ? s.fresh - s.distinct : 0);
  else
    std::printf("# distinct k-mers: %" PRIu64 "\n", s.distinct);
  if (opt.histo_path.empty()) {
    for (size_t c = lowest; c < hist.size(); ++c)
      if (hist[c]) std::printf("%zu %" PRIu64 "\n", c, hist[c]);
  } else {
    std::printf("# histogram: %s\n", opt.histo_path.c_str());
  }
  std::fflush(stdout);
}

}  // namespace kmer
