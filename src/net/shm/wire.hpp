// What travels in the native shm backend's rings: the message types and
// the headers of the fallback transfers.
#ifndef LCI_NET_SHM_WIRE_HPP
#define LCI_NET_SHM_WIRE_HPP

#include <cstdint>

namespace lci::net::shm
{

// message types in the rings
enum : uint16_t {
  kMsg = 1,        // send_copy / post_send*: the payload is the message
  kImm = 2,        // a CMA writeimm landed: payload = the 8-byte imm
  kWriteData = 3,  // fallback write: chunk_hdr_t + data for the target
  kWriteAck = 4,   // fallback write done at the target: payload = ctx
  kReadReq = 5,    // fallback read: read_req_t
  kReadData = 6,   // fallback read data for the initiator: chunk_hdr_t+data
};

// a fallback data chunk: copy the data to `addr` in the receiver
struct chunk_hdr_t {
  uint64_t addr;
  uint64_t ctx;  // the initiator's operation
  uint64_t imm;
  uint32_t flags;  // kLast, kHasImm
  uint32_t pad_;
};
constexpr uint32_t kLast = 1, kHasImm = 2;

struct read_req_t {
  uint64_t raddr;  // in the target
  uint64_t laddr;  // in the initiator
  uint64_t size;
  uint64_t ctx;
};

}  // namespace lci::net::shm

#endif  // LCI_NET_SHM_WIRE_HPP
