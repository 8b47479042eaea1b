// The "pmi1" bootstrap backend: a client of the PMI-1 wire protocol as
// spoken by MPICH's hydra (mpiexec.hydra), Slurm's pmi2 plugin and our
// lcrun. The connection (PMI_FD or PMI_PORT) is pmi_conn.hpp's. Requests
// and replies are single "key=value ..." lines, exchanged in lock-step:
//   [cmd=initack pmiid=ID  -> cmd=initack, cmd=set size=/rank=/debug=]  port
//   cmd=init pmi_version=1 pmi_subversion=1 -> cmd=response_to_init rc=0
//   cmd=get_maxes          -> cmd=maxes kvsname_max= keylen_max= vallen_max=
//   cmd=get_my_kvsname     -> cmd=my_kvsname kvsname=
//   cmd=put kvsname= key= value=  -> cmd=put_result rc=0
//   cmd=barrier_in         -> cmd=barrier_out
//   cmd=get kvsname= key=  -> cmd=get_result rc=0 value=
//   cmd=finalize           -> cmd=finalize_ack
// allgather: kvs_allgather.hpp (puts, one barrier, gets).
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "backends.hpp"
#include "kvs_allgather.hpp"
#include "pmi_conn.hpp"
#include "pmi_wire.hpp"
#include "util/log.hpp"

namespace lci::bootstrap
{
namespace
{

// Requests are kept within this many bytes (the line buffer size of the
// classic simple-PMI implementations, and of Slurm's PMI-1 handler).
constexpr std::size_t kMaxLine = 1024;

class pmi1_backend_t final : public backend_t, private kvs::store_t
{
 public:
  pmi1_backend_t(std::unique_ptr<pmi_conn_t> conn, bool init_done);
  ~pmi1_backend_t() override;
  pmi1_backend_t(const pmi1_backend_t&) = delete;
  pmi1_backend_t& operator=(const pmi1_backend_t&) = delete;

  const char* name() const override { return "pmi1"; }
  int rank_me() const override { return rank_; }
  int rank_n() const override { return size_; }
  void allgather(const void* in, void* out, std::size_t size) override;
  void set_timeout(unsigned seconds) override { conn_->set_timeout(seconds); }
  void forgo_finalize() override
  {
    conn_->hand_over("MPI took the PMI_FD connection over");
  }
  void barrier() override;

 private:
  void initack(long long id);
  long long reply_int(const pmi_wire::message_t& reply, const char* key,
                      const std::string& request, long long fallback);
  // kvs::store_t
  void put(const std::string& key, const std::string& value) override;
  void fence() override { barrier(); }
  std::string get(int rank, const std::string& key) override;

  std::unique_ptr<pmi_conn_t> conn_;
  int rank_ = -1;
  int size_ = 0;
  std::string kvsname_;
  std::size_t keylen_max_ = 0;
  std::size_t chunk_len_ = 0;  // hex characters per put value
};

pmi1_backend_t::pmi1_backend_t(std::unique_ptr<pmi_conn_t> conn, bool init_done)
    : conn_(std::move(conn))
{
  if (!conn_) conn_ = std::make_unique<pmi_conn_t>("pmi1");
  conn_->set_who("pmi1");

  const char* id_env = std::getenv("PMI_ID");
  if (conn_->port_mode() && id_env != nullptr && id_env[0] != '\0') {
    initack(pmi_env_int("pmi1", "PMI_ID", 0, INT_MAX));
  } else {
    size_ = static_cast<int>(pmi_env_int("pmi1", "PMI_SIZE", 1, INT_MAX));
    rank_ = static_cast<int>(pmi_env_int("pmi1", "PMI_RANK", 0, size_ - 1));
  }

  std::string request;
  pmi_wire::message_t reply;
  if (!init_done) {
    request = "cmd=init pmi_version=1 pmi_subversion=1";
    reply = conn_->call_v1(request, "response_to_init");
    std::string version = pmi_wire::get(reply, "pmi_version", "1");
    if (version != "1") {
      conn_->fail(brief_request(request) + " answered pmi_version=" + version +
                  " (expected 1)");
    }
  }

  request = "cmd=get_maxes";
  reply = conn_->call_v1(request, "maxes");
  // Defaults when a server omits the values: the minimums from the PMI docs.
  long long kvsname_max = reply_int(reply, "kvsname_max", request, 16);
  keylen_max_ =
      static_cast<std::size_t>(reply_int(reply, "keylen_max", request, 32));
  long long vallen_max = reply_int(reply, "vallen_max", request, 64);
  if (keylen_max_ < 8 || vallen_max < 3) {
    conn_->fail(brief_request(request) +
                " answered keylen_max=" + std::to_string(keylen_max_) +
                " vallen_max=" + std::to_string(vallen_max) + ", too small");
  }

  request = "cmd=get_my_kvsname";
  reply = conn_->call_v1(request, "my_kvsname");
  kvsname_ = pmi_wire::get(reply, "kvsname");
  if (kvsname_.empty() ||
      static_cast<long long>(kvsname_.size()) >= kvsname_max) {
    conn_->fail(brief_request(request) + " answered kvsname='" + kvsname_ +
                "'");
  }

  // A value must fit vallen_max (with its NUL) and the whole put line must
  // fit kMaxLine: "cmd=put kvsname=K key=KEY value=V". Chunks hold whole
  // bytes (an even number of hex characters).
  std::size_t overhead = std::strlen("cmd=put kvsname= key= value=") +
                         kvsname_.size() + keylen_max_;
  std::size_t line_room = overhead + 64 < kMaxLine ? kMaxLine - overhead : 64;
  chunk_len_ = std::min(static_cast<std::size_t>(vallen_max - 1), line_room);
  chunk_len_ &= ~static_cast<std::size_t>(1);
}

// Port mode (hydra -pmi-port): announce our PMI_ID (and lcrun's job
// secret); the server answers
// "cmd=initack" followed by "cmd=set size=N", "cmd=set rank=R" and
// "cmd=set debug=D" lines.
void pmi1_backend_t::initack(long long id)
{
  std::string request = "cmd=initack pmiid=" + std::to_string(id);
  // lcrun --pmi-port admits only the job's ranks: it hands each the job's
  // secret in LCI_PMI_SECRET (hydra sets no such variable).
  const char* secret = std::getenv("LCI_PMI_SECRET");
  if (secret != nullptr && secret[0] != '\0') {
    request += " secret=" + std::string(secret);
  }
  conn_->call_v1(request, "initack");
  bool have_debug = false;
  while (size_ <= 0 || rank_ < 0 || !have_debug) {
    pmi_wire::message_t reply = conn_->expect_v1(request, "set");
    if (reply.count("size")) {
      size_ = static_cast<int>(reply_int(reply, "size", request, 0));
    }
    if (reply.count("rank")) {
      rank_ = static_cast<int>(reply_int(reply, "rank", request, -1));
    }
    if (reply.count("debug")) have_debug = true;
  }
  if (size_ < 1 || rank_ < 0 || rank_ >= size_) {
    conn_->fail(brief_request(request) + " answered rank=" +
                std::to_string(rank_) + " size=" + std::to_string(size_));
  }
}

pmi1_backend_t::~pmi1_backend_t()
{
  if (conn_->broken()) return;  // no finalize: see pmi_conn_t::fail
  try {
    conn_->call_v1("cmd=finalize", "finalize_ack");
  } catch (const std::exception& e) {
    LCI_LOG(warn, e.what(), " (ignored while finalizing)");
  }
}

long long pmi1_backend_t::reply_int(const pmi_wire::message_t& reply,
                                    const char* key, const std::string& request,
                                    long long fallback)
{
  auto it = reply.find(key);
  if (it == reply.end()) return fallback;
  long long value = 0;
  if (!pmi_wire::parse_int(it->second, &value) || value < INT_MIN ||
      value > INT_MAX) {
    conn_->fail(brief_request(request) + " answered " + key + "='" +
                it->second + "', not an integer");
  }
  return value;
}

void pmi1_backend_t::put(const std::string& key, const std::string& value)
{
  if (key.size() + 1 > keylen_max_) {
    conn_->fail("key '" + key +
                "' exceeds keylen_max=" + std::to_string(keylen_max_));
  }
  conn_->call_v1(
      "cmd=put kvsname=" + kvsname_ + " key=" + key + " value=" + value,
      "put_result");
}

std::string pmi1_backend_t::get(int, const std::string& key)
{
  std::string request = "cmd=get kvsname=" + kvsname_ + " key=" + key;
  return pmi_wire::get(conn_->call_v1(request, "get_result"), "value");
}

void pmi1_backend_t::allgather(const void* in, void* out, std::size_t size)
{
  kvs::allgather(*this, "pmi1", rank_, size_, chunk_len_, in, out, size);
}

void pmi1_backend_t::barrier()
{
  conn_->call_v1("cmd=barrier_in", "barrier_out");
}

}  // namespace

std::unique_ptr<backend_t> make_pmi1_backend(std::unique_ptr<pmi_conn_t> conn,
                                             bool init_done)
{
  return std::make_unique<pmi1_backend_t>(std::move(conn), init_done);
}

}  // namespace lci::bootstrap
