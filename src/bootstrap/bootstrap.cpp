// get_backend(): picks and keeps the process-wide bootstrap backend.
#include "bootstrap.hpp"

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "backends.hpp"

namespace lci::bootstrap
{
namespace
{

bool env_set(const char* name)
{
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0';
}

// True when a PMI-1 launcher started us: lcrun and hydra's default mode give
// PMI_FD + PMI_RANK + PMI_SIZE; hydra's "-pmi-port" mode gives PMI_PORT +
// PMI_ID (rank and size then come from the server's initack reply).
bool pmi1_env_present()
{
  bool fd_or_port = env_set("PMI_FD") || env_set("PMI_PORT");
  bool rank_size = env_set("PMI_RANK") && env_set("PMI_SIZE");
  return (fd_or_port && rank_size) ||
         (env_set("PMI_PORT") && env_set("PMI_ID"));
}

std::shared_ptr<backend_t> create_backend()
{
  const char* var = "LCI_ATTR_BOOTSTRAP_BACKEND";
  const char* forced = std::getenv(var);
  std::string choice = forced ? forced : "";
  if (choice.empty()) choice = pmi1_env_present() ? "pmi1" : "local";
  if (choice == "local") return make_local_backend();
  if (choice == "pmi1") return make_pmi1_backend();
  throw std::runtime_error(std::string("lci bootstrap: ") + var + "='" +
                           choice +
                           "' is not a known backend (use 'local' or 'pmi1')");
}

}  // namespace

std::shared_ptr<backend_t> get_backend()
{
  // Heap-allocated and never freed, so that calls from other static
  // destructors at exit still find a live mutex.
  static std::mutex* mutex = new std::mutex;
  static std::weak_ptr<backend_t>* instance = new std::weak_ptr<backend_t>;
  std::lock_guard<std::mutex> lock(*mutex);
  std::shared_ptr<backend_t> backend = instance->lock();
  if (!backend) {
    backend = create_backend();
    *instance = backend;
  }
  return backend;
}

}  // namespace lci::bootstrap
