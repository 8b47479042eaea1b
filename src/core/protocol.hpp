// What travels on the wire: every message starts with a 16-byte header.
//
//   tag   (64 bits)  the message's tag
//   rank  (32 bits)  the sender's rank
//   meta  (32 bits)  type (4 bits) | matching policy (4 bits) | aux (24 bits)
//
// aux is the remote completion handle of an active message, or the index of
// the target matching engine of a send.
#ifndef LCI_CORE_PROTOCOL_HPP
#define LCI_CORE_PROTOCOL_HPP

#include <cstddef>
#include <cstdint>

#include "lci.hpp"

namespace lci
{

enum class msg_type_t : uint32_t { send = 1, am = 2 };

struct msg_header_t {
  uint64_t tag;
  int32_t rank;
  uint32_t meta;

  static constexpr uint32_t kAuxMax = (1u << 24) - 1;

  static uint32_t make_meta(msg_type_t type, matching_policy_t policy,
                            uint32_t aux)
  {
    return static_cast<uint32_t>(type) | (static_cast<uint32_t>(policy) << 4) |
           (aux << 8);
  }
  msg_type_t type() const { return static_cast<msg_type_t>(meta & 0xf); }
  matching_policy_t policy() const
  {
    return static_cast<matching_policy_t>((meta >> 4) & 0xf);
  }
  uint32_t aux() const { return meta >> 8; }
};
static_assert(sizeof(msg_header_t) == 16, "the wire header is 16 bytes");

// The inject protocol copies header and payload into a stack buffer of this
// size, so the inject limit never exceeds it.
constexpr size_t kMaxInjectWire = 1024;

}  // namespace lci

#endif  // LCI_CORE_PROTOCOL_HPP
