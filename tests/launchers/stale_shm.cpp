// stale_shm: a crashed run must not break the next one. A process killed by
// SIGKILL leaves libfabric's shm region "/dev/shm/<pid>:<domain>:<ep>"
// behind; when a later process gets the same pid, its first endpoint finds
// the name taken. This program plants such a region under its own pid (a
// zero-filled file, as a dead process of another libfabric version would
// leave), then allocates a runtime on the shm provider, which must work,
// exchange a message with itself, and leave no region of ours behind.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <lci.hpp>
#include <stdexcept>
#include <string>

int main()
{
  std::string stale = "/dev/shm/" + std::to_string(getpid()) + ":0:0";
  int fd = open(stale.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0) {
    std::perror(("stale_shm: cannot plant " + stale).c_str());
    return 1;
  }
  static const char zeros[4096] = {};
  bool planted = write(fd, zeros, sizeof(zeros)) == sizeof(zeros);
  close(fd);
  if (!planted) {
    unlink(stale.c_str());
    return 1;
  }
  int status = 0;
  try {
    lci::g_runtime_init_x().ofi_provider_name("shm").bootstrap_backend(
        "local")();
    int in = 0, out = 42;
    lci::post_send(0, &out, sizeof(out), 7, lci::COMP_NULL);
    lci::status_t s;
    do {
      s = lci::post_recv(0, &in, sizeof(in), 7, lci::COMP_NULL);
    } while (s.is_retry());
    if (in != 42) throw std::runtime_error("received " + std::to_string(in));
    lci::g_runtime_fina();
    std::printf("stale_shm: runtime ok with a stale %s planted\n",
                stale.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stale_shm: error: %s\n", e.what());
    status = 1;
  }
  // our endpoints use names with a per-process nonce, so the planted
  // region (libfabric's default name for our pid) is never touched: the
  // test removes it itself
  unlink(stale.c_str());
  return status;
}
