// Internal: constructors of the concrete bootstrap backends, used by
// get_backend() (bootstrap.cpp). Not part of the public interface.
#ifndef LCI_BOOTSTRAP_BACKENDS_HPP
#define LCI_BOOTSTRAP_BACKENDS_HPP

#include <memory>

#include "bootstrap.hpp"

namespace lci::bootstrap
{

// Singleton: rank 0 of 1.
std::unique_ptr<backend_t> make_local_backend();

// PMI-1 wire-protocol client (PMI_FD or PMI_PORT). Throws
// std::runtime_error when the environment is unusable or the process
// manager answers with an error.
std::unique_ptr<backend_t> make_pmi1_backend();

}  // namespace lci::bootstrap

#endif  // LCI_BOOTSTRAP_BACKENDS_HPP
