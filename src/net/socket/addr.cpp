// Which local address the socket backend listens on (socket.hpp).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "net/socket/socket.hpp"

namespace lci::net::socket
{

// A UDP socket "connected" to the host sends nothing; getsockname then
// tells the source address of the kernel's route to it.
std::string route_address(const std::vector<std::string>& hosts)
{
  for (const std::string& h : hosts) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(h.c_str(), "9", &hints, &res) != 0 || !res) continue;
    std::string out;
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
      sockaddr_in a{};
      socklen_t len = sizeof(a);
      char buf[INET_ADDRSTRLEN] = {};
      if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
          ::inet_ntop(AF_INET, &a.sin_addr, buf, sizeof(buf)))
        out = buf;
    }
    if (fd >= 0) ::close(fd);
    ::freeaddrinfo(res);
    // a host name that resolves to this machine (loopback) says nothing
    if (!out.empty() && out.compare(0, 4, "127.") != 0) return out;
  }
  return "";
}

}  // namespace lci::net::socket
