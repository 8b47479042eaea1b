// The frames of the socket backend on a TCP stream (socket.hpp): an 8-byte
// header, then for RMA frames a 32-byte extension, then the payload. Both
// ends are the same build on the same kind of machine (the job's ranks), so
// fields travel in host byte order.
//
//   msg        hdr | payload                      a message (send_copy,
//   post_send) msg_acked  hdr | id | payload                 the same, acked
//   once delivered
//                                                 (post_send_network)
//   write      hdr | rma (rkey, disp, -, id) | data   RMA write, answered by
//   ack/nack writeimm   hdr | rma (rkey, disp, imm, id) | data the same, plus a
//   remote_write cqe read_req   hdr | rma (rkey, disp, size, id)   answered by
//   read_resp or nack read_resp  hdr | id | data ack, nack  hdr | id the
//   target's verdict on a write
//                                                 (nack: refused by its key
//                                                 table)
//   bye        hdr                            the sender closes in order
//
// hdr.len counts every byte after the header.
#ifndef LCI_NET_SOCKET_WIRE_HPP
#define LCI_NET_SOCKET_WIRE_HPP

#include <cstdint>

namespace lci::net::socket
{

enum class frame_t : uint8_t {
  msg = 1,
  write = 2,
  writeimm = 3,
  read_req = 4,
  read_resp = 5,
  ack = 6,
  nack = 7,
  bye = 8,  // the peer freed its device: its connection's end is no failure
  msg_acked = 9
};

struct hdr_t {
  uint32_t len;  // bytes after this header
  uint8_t type;  // frame_t
  uint8_t pad[3];
};
static_assert(sizeof(hdr_t) == 8, "the header is 8 bytes on the wire");

struct rma_t {
  uint64_t rkey;
  uint64_t disp;  // the target address (remote_t's base + disp)
  uint64_t arg;   // writeimm: the immediate data; read_req: the size
  uint64_t id;    // the initiator's operation, echoed in the answer
};
static_assert(sizeof(rma_t) == 32, "the RMA extension is 32 bytes");

// the largest payload a frame carries (hdr_t::len is 32 bits)
constexpr uint64_t kMaxFrame = uint64_t(1) << 31;

// The first bytes on a new connection: who connects.
struct hello_t {
  uint32_t magic;
  uint32_t rank;
};
constexpr uint32_t kHelloMagic = 0x4c43534b;  // "LCSK"

}  // namespace lci::net::socket

#endif  // LCI_NET_SOCKET_WIRE_HPP
