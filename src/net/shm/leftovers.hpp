// Named segments of native shm ranks that died: a rank killed (or crashed)
// between creating its segments and its peers mapping them leaves their
// names in /dev/shm ("/lci-shm-<pid>-..."); lcrun removes those of the
// ranks it saw die, other launchers (hydra, mpirun, srun) do not. The names
// are unique (pid, start time, counter), so they never block a later job,
// but they hold memory. The first native context of a process removes such
// leftovers of its own user: a file counts as one only if its header is
// ours (either kind of segment), names the pid of its file name and this
// pid namespace, and that pid is gone. Anything else is left alone
// (another user's, another pid namespace's, a header not written yet, a
// pid in use again).
#ifndef LCI_NET_SHM_LEFTOVERS_HPP
#define LCI_NET_SHM_LEFTOVERS_HPP

#include <cstdint>

namespace lci::net::shm
{

// The header fields both kinds of segment share, at the same offsets.
struct owner_words_t {
  static constexpr unsigned kPidOffset = 24;    // uint64_t: the owner's pid
  static constexpr unsigned kPidnsOffset = 56;  // uint64_t: its pid namespace
};

// This process's pid namespace (the inode of /proc/self/ns/pid; 0 when
// unknown).
uint64_t pid_namespace();

// Removes the leftovers described above, the first time it is called in
// this process; returns how many it removed (0 on later calls).
int reclaim_leftovers(uint64_t magic_device, uint64_t magic_keys);

}  // namespace lci::net::shm

#endif  // LCI_NET_SHM_LEFTOVERS_HPP
