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

std::string machine_of(const std::string& node_id)
{
  const size_t a = node_id.find('/');
  if (a == std::string::npos) return node_id;
  return node_id.substr(0, node_id.find("/split", a + 1));
}

std::string host_of(const std::string& node_id)
{
  const std::string m = machine_of(node_id);
  const size_t a = m.find('/');
  return a == std::string::npos ? m : m.substr(a + 1);
}

std::vector<std::string> other_hosts(const std::vector<std::string>& nodes,
                                     const std::string& me, size_t limit)
{
  std::vector<std::string> out;
  const std::string mine = machine_of(me);
  for (const std::string& n : nodes) {
    if (machine_of(n) == mine) continue;
    const std::string h = host_of(n);
    bool seen = false;
    for (const std::string& o : out) seen = seen || o == h;
    if (!seen) out.push_back(h);
    if (out.size() == limit) break;
  }
  return out;
}

}  // namespace lci::net
