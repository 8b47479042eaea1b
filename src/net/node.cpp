#include "net/node.hpp"

#include <unistd.h>

#include <fstream>

namespace lci::net
{

std::string node_id(const runtime_attr_t& attr, int rank)
{
  std::string boot;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::getline(f, boot);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string id = boot + "/" + host;
  if (attr.shm_node_split > 1)
    id += "/split" +
          std::to_string(static_cast<size_t>(rank) % attr.shm_node_split);
  return id;
}

}  // namespace lci::net
