// The "local" bootstrap backend: a job of one process (rank 0 of 1), used
// when the program runs without a launcher.
#include <cstring>
#include <memory>

#include "backends.hpp"

namespace lci::bootstrap
{
namespace
{

class local_backend_t final : public backend_t
{
 public:
  const char* name() const override { return "local"; }
  int rank_me() const override { return 0; }
  int rank_n() const override { return 1; }
  void allgather(const void* in, void* out, std::size_t size) override
  {
    // memmove: the caller may pass overlapping buffers for an in-place call.
    if (size > 0 && in != out) std::memmove(out, in, size);
  }
  void barrier() override {}
};

}  // namespace

std::unique_ptr<backend_t> make_local_backend()
{
  return std::make_unique<local_backend_t>();
}

}  // namespace lci::bootstrap
