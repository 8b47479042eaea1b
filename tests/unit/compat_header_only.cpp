// Compiled with nothing but <lci.hpp>: upstream LCI 2's header provides
// std::vector, std::unique_ptr / std::shared_ptr, std::function and
// std::memcpy, and programs written for it rely on that (a missing include
// here is a compile error of the unit test).
#include <lci.hpp>

namespace lci_compat
{

size_t use_header_only_names()
{
  std::vector<int> v(3, 7);
  std::unique_ptr<int> p(new int(5));
  std::shared_ptr<int> q = std::make_shared<int>(6);
  std::function<int(int)> twice = [](int x) { return 2 * x; };
  int copy[3];
  std::memcpy(copy, v.data(), sizeof(copy));
  return static_cast<size_t>(copy[0] + copy[2] + *p + *q + twice(1) +
                             static_cast<int>(std::strlen("lci")));
}

}  // namespace lci_compat
