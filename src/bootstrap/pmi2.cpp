// The "pmi2" bootstrap backend: a client of the PMI-2 wire protocol as
// spoken by MPICH's hydra (mpiexec.hydra) and Slurm (srun --mpi=pmi2), over
// the same connection as PMI-1 (pmi_conn.hpp). The first exchange is in the
// PMI-1 format; every later message is length-prefixed "cmd=...;k=v;...;":
//   cmd=init pmi_version=2 pmi_subversion=0 -> cmd=response_to_init rc=0
//                                              pmi_version=2 (PMI-1 format)
//   cmd=fullinit;pmijobid=J;pmirank=R;threaded=FALSE;
//                               -> cmd=fullinit-response;rank=;size=;rc=0;
//   cmd=kvs-put;key=K;value=V;  -> cmd=kvs-put-response;rc=0;
//   cmd=kvs-fence;              -> cmd=kvs-fence-response;rc=0;
//   cmd=kvs-get;srcid=S;key=K;  -> cmd=kvs-get-response;found=TRUE;value=V;
//   cmd=finalize;               -> cmd=finalize-response;rc=0;
// PMI-2 has no barrier of its own, and a fence alone is not one everywhere:
// Slurm answers kvs-fence once every task has fenced, but hydra answers at
// once and only counts the fence (an "epoch"); there a kvs-get of a key that
// is missing waits until every rank has reached the getter's epoch. So the
// barrier is a fence followed by a get of a key no rank ever puts: it returns
// after every rank has fenced under both servers (found=FALSE is expected).
// R is PMI_RANK (PMI_FD mode) or PMI_ID (hydra -pmi-port mode), J is
// PMI_JOBID (empty when the launcher sets none). A reply with rc != 0 is
// reported with the server's errmsg (pmi_conn_t::call_v2).
#include <climits>
#include <cstdlib>
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

// Hex characters per value: below the 1024-byte value limit of hydra and
// Slurm (PMI2_MAX_VALLEN) with room for the rest of the request.
constexpr std::size_t kChunkLen = 1000;

class pmi2_backend_t final : public backend_t, private kvs::store_t
{
 public:
  pmi2_backend_t(std::unique_ptr<pmi_conn_t> conn, bool init_done);
  ~pmi2_backend_t() override;
  pmi2_backend_t(const pmi2_backend_t&) = delete;
  pmi2_backend_t& operator=(const pmi2_backend_t&) = delete;

  const char* name() const override { return "pmi2"; }
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
  long long reply_int(const pmi_wire::message_t& reply, const char* key,
                      const std::string& request);
  // kvs::store_t
  void put(const std::string& key, const std::string& value) override;
  void fence() override;
  std::string get(int rank, const std::string& key) override;

  std::unique_ptr<pmi_conn_t> conn_;
  int rank_ = -1;
  int size_ = 0;
};

pmi2_backend_t::pmi2_backend_t(std::unique_ptr<pmi_conn_t> conn, bool init_done)
    : conn_(std::move(conn))
{
  if (!conn_) conn_ = std::make_unique<pmi_conn_t>("pmi2");
  conn_->set_who("pmi2");
  const char* rank_var = conn_->port_mode() ? "PMI_ID" : "PMI_RANK";
  long long env_rank = pmi_env_int("pmi2", rank_var, 0, INT_MAX - 1);
  long long env_size = -1;
  const char* size_text = std::getenv("PMI_SIZE");
  if (size_text != nullptr && size_text[0] != '\0') {
    env_size = pmi_env_int("pmi2", "PMI_SIZE", 1, INT_MAX);
  }

  if (!init_done) {
    std::string request = "cmd=init pmi_version=2 pmi_subversion=0";
    pmi_wire::message_t reply = conn_->call_v1(request, "response_to_init");
    std::string version = pmi_wire::get(reply, "pmi_version");
    if (version != "2") {
      conn_->fail(brief_request(request) + " answered pmi_version=" +
                  (version.empty() ? "(none)" : version) +
                  ": the process manager does not speak PMI-2 (try "
                  "LCI_ATTR_BOOTSTRAP_BACKEND=pmi1)");
    }
  }

  // Slurm refuses a fullinit without all three fields (rc=3); hydra needs
  // only pmirank and ignores the others. pmijobid is the launcher's
  // PMI_JOBID (Slurm sets it; its value is not checked), threaded=FALSE as
  // this client has one request outstanding at a time.
  const char* jobid_env = std::getenv("PMI_JOBID");
  std::string jobid = jobid_env != nullptr ? jobid_env : "";
  if (jobid.find(';') != std::string::npos) jobid.clear();  // not sendable
  std::string request = "cmd=fullinit;pmijobid=" + jobid +
                        ";pmirank=" + std::to_string(env_rank) +
                        ";threaded=FALSE;";
  pmi_wire::message_t reply = conn_->call_v2(request, "fullinit-response");
  rank_ = static_cast<int>(reply_int(reply, "rank", request));
  size_ = static_cast<int>(reply_int(reply, "size", request));
  if (size_ < 1 || rank_ < 0 || rank_ >= size_ || rank_ != env_rank ||
      (env_size > 0 && env_size != size_)) {
    conn_->fail(
        brief_request(request) + " answered rank=" + std::to_string(rank_) +
        " size=" + std::to_string(size_) + ", but the environment says " +
        rank_var + "=" + std::to_string(env_rank) +
        (env_size > 0 ? " PMI_SIZE=" + std::to_string(env_size) : ""));
  }
}

pmi2_backend_t::~pmi2_backend_t()
{
  if (conn_->broken()) return;  // no finalize: see pmi_conn_t::fail
  try {
    conn_->call_v2("cmd=finalize;", "finalize-response");
  } catch (const std::exception& e) {
    LCI_LOG(warn, e.what(), " (ignored while finalizing)");
  }
}

long long pmi2_backend_t::reply_int(const pmi_wire::message_t& reply,
                                    const char* key, const std::string& request)
{
  auto it = reply.find(key);
  long long value = 0;
  if (it == reply.end() || !pmi_wire::parse_int(it->second, &value) ||
      value < INT_MIN || value > INT_MAX) {
    conn_->fail(brief_request(request) + " answered " + key + "='" +
                (it == reply.end() ? std::string("(missing)") : it->second) +
                "', not an integer");
  }
  return value;
}

void pmi2_backend_t::put(const std::string& key, const std::string& value)
{
  conn_->call_v2("cmd=kvs-put;key=" + key + ";value=" + value + ";",
                 "kvs-put-response");
}

void pmi2_backend_t::fence()
{
  conn_->call_v2("cmd=kvs-fence;", "kvs-fence-response");
}

void pmi2_backend_t::barrier()
{
  fence();
  // the key is never put (kvs_allgather's keys start with "lci<digit>")
  std::string request =
      "cmd=kvs-get;srcid=" + std::to_string(rank_) + ";key=lci-barrier;";
  pmi_wire::message_t reply = conn_->call_v2(request, "kvs-get-response");
  if (pmi_wire::get(reply, "found") == "TRUE") {
    conn_->fail(brief_request(request) +
                ": found a key that no rank puts (another program in this "
                "PMI job?)");
  }
}

std::string pmi2_backend_t::get(int rank, const std::string& key)
{
  std::string request =
      "cmd=kvs-get;srcid=" + std::to_string(rank) + ";key=" + key + ";";
  pmi_wire::message_t reply = conn_->call_v2(request, "kvs-get-response");
  if (pmi_wire::get(reply, "found") != "TRUE") {
    conn_->fail(brief_request(request) + ": key not found after the fence");
  }
  return pmi_wire::get(reply, "value");
}

void pmi2_backend_t::allgather(const void* in, void* out, std::size_t size)
{
  kvs::allgather(*this, "pmi2", rank_, size_, kChunkLen, in, out, size);
}

}  // namespace

std::unique_ptr<backend_t> make_pmi2_backend(std::unique_ptr<pmi_conn_t> conn,
                                             bool init_done)
{
  return std::make_unique<pmi2_backend_t>(std::move(conn), init_done);
}

}  // namespace lci::bootstrap
