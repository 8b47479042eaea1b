#include "net/net.hpp"

#include <cstring>
#include <vector>

namespace lci::net
{

error_t device_t::post_inject_gather(int rank, const void* head, size_t hlen,
                                     const void* tail, size_t tlen)
{
  // the core injects at most 1 KiB (protocol.hpp kMaxInjectWire)
  alignas(16) char tmp[1024];
  std::vector<char> big;
  char* out = tmp;
  if (hlen + tlen > sizeof(tmp)) {
    big.resize(hlen + tlen);
    out = big.data();
  }
  if (hlen) std::memcpy(out, head, hlen);
  if (tlen) std::memcpy(out + hlen, tail, tlen);
  return post_inject(rank, out, hlen + tlen);
}

}  // namespace lci::net
