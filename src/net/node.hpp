// Which node a rank runs on, as the native shm backend understands it: two
// ranks with the same node id share /dev/shm and may reach each other's
// memory with cross-memory attach. The runtime exchanges every rank's node
// id at allocation (the allgather that agrees on its tag), so a backend
// knows its node-local peers before it opens devices (net.cpp, hybrid/).
#ifndef LCI_NET_NODE_HPP
#define LCI_NET_NODE_HPP

#include <string>
#include <vector>

#include "lci.hpp"

namespace lci::net
{

// The boot id and the host name of this machine ("<boot id>/<host>"). With
// the runtime attribute shm_node_split k > 1, a test and diagnostic knob,
// rank r pretends to run on node r % k of this machine ("/split<r % k>" is
// appended), so that the per-peer routing of the hybrid backend can be
// tested on one machine.
std::string node_id(const runtime_attr_t& attr, int rank);

// The machine of a node id: the id without the split suffix (boot id and
// host name), and its host name alone.
std::string machine_of(const std::string& node_id);
std::string host_of(const std::string& node_id);

// The host names of the other machines of the job, at most `limit` of them
// (a network backend looks up the route to them), empty when every rank
// runs on the machine of node id `me` (shm_node_split only pretends).
std::vector<std::string> other_hosts(const std::vector<std::string>& nodes,
                                     const std::string& me, size_t limit = 4);

}  // namespace lci::net

#endif  // LCI_NET_NODE_HPP
