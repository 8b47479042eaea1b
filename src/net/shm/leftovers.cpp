#include "net/shm/leftovers.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace lci::net::shm
{
namespace
{
// the pid in "lci-shm-<pid>-...", or 0
long pid_of_name(const char* name)
{
  static const char kPrefix[] = "lci-shm-";
  if (std::strncmp(name, kPrefix, sizeof(kPrefix) - 1) != 0) return 0;
  const char* p = name + sizeof(kPrefix) - 1;
  char* end = nullptr;
  long pid = std::strtol(p, &end, 10);
  if (end == p || *end != '-' || pid <= 0) return 0;
  return pid;
}

bool is_leftover(const char* name, long pid, uint64_t magic_device,
                 uint64_t magic_keys, uint64_t pidns)
{
  // the pid gone here (EPERM: alive, another user's)
  if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) return false;
  const std::string path = std::string("/") + name;
  int fd = shm_open(path.c_str(), O_RDONLY | O_NOFOLLOW, 0);
  if (fd < 0) return false;
  struct stat st;
  unsigned char head[64];
  bool ours = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
              st.st_uid == ::geteuid() &&
              pread(fd, head, sizeof(head), 0) == sizeof(head);
  ::close(fd);
  if (!ours) return false;
  uint64_t magic, owner, ns;
  std::memcpy(&magic, head, sizeof(magic));
  std::memcpy(&owner, head + owner_words_t::kPidOffset, sizeof(owner));
  std::memcpy(&ns, head + owner_words_t::kPidnsOffset, sizeof(ns));
  return (magic == magic_device || magic == magic_keys) &&
         owner == static_cast<uint64_t>(pid) && ns == pidns && ns != 0;
}

}  // namespace

uint64_t pid_namespace()
{
  struct stat st;
  if (stat("/proc/self/ns/pid", &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

int reclaim_leftovers(uint64_t magic_device, uint64_t magic_keys)
{
  static std::once_flag once;
  int n = 0;
  std::call_once(once, [&] {
    const uint64_t pidns = pid_namespace();
    if (pidns == 0) return;
    DIR* d = opendir("/dev/shm");
    if (!d) return;
    while (struct dirent* e = readdir(d)) {
      long pid = pid_of_name(e->d_name);
      if (pid == 0) continue;
      if (!is_leftover(e->d_name, pid, magic_device, magic_keys, pidns))
        continue;
      if (shm_unlink((std::string("/") + e->d_name).c_str()) == 0) ++n;
    }
    closedir(d);
  });
  return n;
}

}  // namespace lci::net::shm
