#include "net/registry.hpp"

#include "util/error.hpp"

namespace lci::net
{

// Each backend's registration function (its register.cpp). They are listed
// here, not run from static initializers in their own files: a static liblci
// would drop an object file that nothing references, and with it the
// backend.
namespace shm
{
backend_entry_t registry_entry();
}
namespace socket
{
backend_entry_t registry_entry();
}
#ifdef LCI_HAVE_OFI
namespace ofi
{
backend_entry_t registry_entry();
}
#endif
#ifdef LCI_HAVE_IBV
namespace ibv
{
backend_entry_t registry_entry();
bool usable(std::string* why);
}  // namespace ibv
#endif
namespace hybrid
{
backend_entry_t registry_entry();
}

#ifndef LCI_OFI_SETTING
#define LCI_OFI_SETTING "LCI_WITH_OFI=OFF"
#endif
#ifndef LCI_IBV_SETTING
#define LCI_IBV_SETTING "LCI_WITH_IBV=OFF"
#endif

namespace
{

std::vector<backend_entry_t> register_all()
{
  std::vector<backend_entry_t> out;
  out.push_back(shm::registry_entry());
  // the first network backend is the hybrid backend's remote route unless
  // the runtime attribute net_remote names another
  out.push_back(socket::registry_entry());
#ifdef LCI_HAVE_OFI
  out.push_back(ofi::registry_entry());
#endif
#ifdef LCI_HAVE_IBV
  out.push_back(ibv::registry_entry());
#endif
  // a combining backend needs a network backend to combine with
  bool network = false;
  for (const backend_entry_t& b : out)
    network = network || b.kind == backend_kind_t::network;
  if (network) out.push_back(hybrid::registry_entry());
  return out;
}

}  // namespace

const std::vector<backend_entry_t>& backends()
{
  static const std::vector<backend_entry_t> all = register_all();
  return all;
}

const backend_entry_t* find_backend(const std::string& name)
{
  for (const backend_entry_t& b : backends())
    if (name == b.name) return &b;
  return nullptr;
}

const backend_entry_t* first_backend(backend_kind_t kind)
{
  for (const backend_entry_t& b : backends())
    if (b.kind == kind) return &b;
  return nullptr;
}

std::string backend_names()
{
  std::string out;
  for (const backend_entry_t& b : backends())
    out += (out.empty() ? "" : ", ") + std::string(b.name);
  return out;
}

const backend_entry_t* network_backend(std::string* why)
{
  if (why) why->clear();
#ifdef LCI_HAVE_IBV
  std::string reason;
  if (ibv::usable(&reason)) return find_backend("ibv");
  if (why) *why = "ibv: " + reason;
#endif
  for (const backend_entry_t& b : backends())
    if (b.kind == backend_kind_t::network && std::string(b.name) != "ibv")
      return &b;
  return first_backend(backend_kind_t::network);
}

std::string why_not_built(const std::string& name)
{
  if (find_backend(name)) return "";
  if (name == "ofi") return "built with " LCI_OFI_SETTING;
  if (name == "ibv") return "built with " LCI_IBV_SETTING;
  if (name == "hybrid")
    return "it needs a network backend, and this build has none: built "
           "with " LCI_OFI_SETTING;
  return "";
}

std::unique_ptr<context_t> alloc_context(const runtime_attr_t& attr,
                                         int rank_me, int rank_n,
                                         const std::vector<std::string>& nodes)
{
  if (static_cast<int>(nodes.size()) != rank_n || rank_me < 0 ||
      rank_me >= rank_n)
    util::throw_fatal("alloc_runtime: ", nodes.size(), " node ids for ", rank_n,
                      " ranks");
  const backend_entry_t* b = nullptr;
  if (attr.backend == "auto") {
    const std::string& me = nodes[static_cast<size_t>(rank_me)];
    size_t elsewhere = 0;
    for (const std::string& n : nodes) elsewhere += n != me;
    // every rank on this node: the node-local backend alone; else the
    // combining one (node-local here, the network backend for the others)
    b = first_backend(elsewhere ? backend_kind_t::combining
                                : backend_kind_t::node_local);
    if (!b)
      util::throw_fatal(
          "alloc_runtime: backend auto: ", elsewhere, " of ", nodes.size(),
          " ranks run on other nodes, and this build has no network "
          "backend to reach them (",
          why_not_built("ofi"), "; built in: ", backend_names(),
          "). Run every rank on one node, or rebuild LCI with libfabric "
          "(-DLCI_WITH_OFI=ON)");
  } else {
    b = find_backend(attr.backend);
    if (!b) {
      const std::string why = why_not_built(attr.backend);
      if (why.empty())
        util::throw_fatal("alloc_runtime: unknown backend '", attr.backend,
                          "'; built in: ", backend_names(), " (or auto)");
      util::throw_fatal("alloc_runtime: backend '", attr.backend,
                        "' is not in this build (", why,
                        "); built in: ", backend_names(), " (or auto)");
    }
  }
  return b->make(attr, rank_me, rank_n, nodes);
}

}  // namespace lci::net
