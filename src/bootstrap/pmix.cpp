// The "pmix" bootstrap backend: a PMIx client through libpmix, for Open
// MPI's mpirun (PRRTE/ORTE), srun --mpi=pmix and other PMIx servers. Built
// only when CMake found libpmix (LCI_HAVE_PMIX); otherwise the functions
// below say so.
//
//   PMIx_Init                 -> our namespace and rank
//   PMIx_Get(PMIX_JOB_SIZE)   -> the number of ranks
//   allgather: PMIx_Put(key "lci-ag<seq>", byte object) + PMIx_Commit, one
//              PMIx_Fence with PMIX_COLLECT_DATA, then PMIx_Get per rank
//              (served from the local copy the fence brought)
//   barrier:   PMIx_Fence without data
//   PMIx_Finalize when the backend is destroyed (at process exit)
#include "backends.hpp"

#ifdef LCI_HAVE_PMIX

#include <pmix.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kvs_allgather.hpp"
#include "util/log.hpp"

namespace lci::bootstrap
{
namespace
{

[[noreturn]] void fail(const std::string& what)
{
  throw std::runtime_error("lci bootstrap (pmix): " + what);
}

std::string status_text(pmix_status_t rc)
{
  return std::string(PMIx_Error_string(rc)) + " (" + std::to_string(rc) + ")";
}

class pmix_backend_t final : public backend_t
{
 public:
  pmix_backend_t();
  ~pmix_backend_t() override;
  pmix_backend_t(const pmix_backend_t&) = delete;
  pmix_backend_t& operator=(const pmix_backend_t&) = delete;

  const char* name() const override { return "pmix"; }
  int rank_me() const override { return rank_; }
  int rank_n() const override { return size_; }
  void allgather(const void* in, void* out, std::size_t size) override;
  void barrier() override;
  void set_timeout(unsigned seconds) override { timeout_s_.store(seconds); }

 private:
  void fence(bool collect, const char* what);

  std::atomic<unsigned> timeout_s_{0};
  pmix_proc_t me_;
  int rank_ = -1;
  int size_ = 0;
};

pmix_backend_t::pmix_backend_t()
{
  pmix_status_t rc = PMIx_Init(&me_, nullptr, 0);
  if (rc != PMIX_SUCCESS) {
    fail("PMIx_Init failed: " + status_text(rc) +
         " (PMIx variables are set but the PMIx server cannot be reached)");
  }
  pmix_proc_t job;
  PMIX_LOAD_PROCID(&job, me_.nspace, PMIX_RANK_WILDCARD);
  pmix_value_t* value = nullptr;
  rc = PMIx_Get(&job, PMIX_JOB_SIZE, nullptr, 0, &value);
  if (rc != PMIX_SUCCESS || value == nullptr) {
    PMIx_Finalize(nullptr, 0);
    fail("PMIx_Get(PMIX_JOB_SIZE) failed: " + status_text(rc));
  }
  long long size = -1;
  switch (value->type) {
    case PMIX_UINT32:
      size = value->data.uint32;
      break;
    case PMIX_INT:
      size = value->data.integer;
      break;
    case PMIX_UINT64:
      size = static_cast<long long>(value->data.uint64);
      break;
    default:
      break;
  }
  PMIX_VALUE_RELEASE(value);
  if (size < 1 || size > INT32_MAX || me_.rank >= size) {
    PMIx_Finalize(nullptr, 0);
    fail("the PMIx server reports rank " + std::to_string(me_.rank) +
         " of a job of size " + std::to_string(size));
  }
  rank_ = static_cast<int>(me_.rank);
  size_ = static_cast<int>(size);
}

pmix_backend_t::~pmix_backend_t()
{
  pmix_status_t rc = PMIx_Finalize(nullptr, 0);
  if (rc != PMIX_SUCCESS) {
    LCI_LOG(warn, "bootstrap (pmix): PMIx_Finalize failed: ", status_text(rc),
            " (ignored)");
  }
}

void pmix_backend_t::fence(bool collect, const char* what)
{
  pmix_info_t info[2];
  PMIX_INFO_CONSTRUCT(&info[0]);
  PMIX_INFO_CONSTRUCT(&info[1]);
  bool flag = collect;
  PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &flag, PMIX_BOOL);
  unsigned timeout_s = timeout_s_.load();
  int timeout = static_cast<int>(std::min<unsigned>(timeout_s, INT_MAX));
  std::size_t ninfo = 1;
  if (timeout > 0) {
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
    ninfo = 2;
  }
  pmix_status_t rc = PMIx_Fence(nullptr, 0, info, ninfo);
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
  if (rc == PMIX_ERR_TIMEOUT) {
    fail(std::string("PMIx_Fence (") + what + ") did not complete within " +
         std::to_string(timeout_s) +
         " s (bootstrap_timeout): a rank may have exited or hung before "
         "reaching it, and the launcher did not end the job");
  }
  if (rc != PMIX_SUCCESS) {
    fail(std::string("PMIx_Fence (") + what + ") failed: " + status_text(rc) +
         " (a rank may have exited)");
  }
}

void pmix_backend_t::barrier() { fence(false, "barrier"); }

void pmix_backend_t::allgather(const void* in, void* out, std::size_t size)
{
  std::string key = "lci-ag" + std::to_string(kvs::next_seq());
  if (size == 0) {
    fence(false, key.c_str());
    return;
  }
  // Copy first: `in` may alias part of `out`.
  std::vector<char> mine(static_cast<const char*>(in),
                         static_cast<const char*>(in) + size);
  pmix_value_t value;
  PMIX_VALUE_CONSTRUCT(&value);
  value.type = PMIX_BYTE_OBJECT;
  value.data.bo.bytes = mine.data();
  value.data.bo.size = size;
  // PMIx_Put copies the value (no PMIX_VALUE_DESTRUCT: the bytes are ours).
  pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &value);
  if (rc != PMIX_SUCCESS)
    fail("PMIx_Put(" + key + ") failed: " + status_text(rc));
  rc = PMIx_Commit();
  if (rc != PMIX_SUCCESS) fail("PMIx_Commit failed: " + status_text(rc));
  fence(true, key.c_str());

  auto* dest = static_cast<char*>(out);
  for (int r = 0; r < size_; ++r) {
    char* slot = dest + static_cast<std::size_t>(r) * size;
    if (r == rank_) {
      std::memcpy(slot, mine.data(), size);
      continue;
    }
    pmix_proc_t peer;
    PMIX_LOAD_PROCID(&peer, me_.nspace, static_cast<pmix_rank_t>(r));
    pmix_value_t* got = nullptr;
    rc = PMIx_Get(&peer, key.c_str(), nullptr, 0, &got);
    if (rc != PMIX_SUCCESS || got == nullptr) {
      fail("PMIx_Get(rank " + std::to_string(r) + ", " + key +
           ") failed: " + status_text(rc));
    }
    bool ok = got->type == PMIX_BYTE_OBJECT && got->data.bo.size == size;
    if (ok) std::memcpy(slot, got->data.bo.bytes, size);
    std::size_t got_size =
        got->type == PMIX_BYTE_OBJECT ? got->data.bo.size : 0;
    PMIX_VALUE_RELEASE(got);
    if (!ok) {
      fail("rank " + std::to_string(r) + " published " +
           std::to_string(got_size) + " bytes under " + key + ", expected " +
           std::to_string(size));
    }
  }
}

}  // namespace

bool pmix_supported() { return true; }

std::unique_ptr<backend_t> make_pmix_backend()
{
  return std::make_unique<pmix_backend_t>();
}

}  // namespace lci::bootstrap

#else  // !LCI_HAVE_PMIX

#include <stdexcept>

namespace lci::bootstrap
{

bool pmix_supported() { return false; }

std::unique_ptr<backend_t> make_pmix_backend()
{
  throw std::runtime_error(
      "lci bootstrap (pmix): this LCI was built without PMIx support "
      "(libpmix was not found at configure time; install libpmix-dev and "
      "reconfigure with -DLCI_WITH_PMIX=ON)");
}

}  // namespace lci::bootstrap

#endif  // LCI_HAVE_PMIX
