// Immediate data of the ibv backend: the core's post_writeimm value
// travels as the 32-bit immediate of an RDMA write with immediate, in
// network byte order as the verbs API carries it (caps_t::imm_data_size 4).
#ifndef LCI_NET_IBV_IMM_HPP
#define LCI_NET_IBV_IMM_HPP

#include <arpa/inet.h>

#include <cstdint>

#include "util/error.hpp"

namespace lci::net::ibv
{

inline uint32_t encode_imm(uint64_t imm)
{
  if (imm > UINT32_MAX)
    util::throw_fatal("post_writeimm: immediate data ", imm,
                      " does not fit the 4 bytes of the ibv backend");
  return htonl(static_cast<uint32_t>(imm));
}

inline uint64_t decode_imm(uint32_t imm_be) { return ntohl(imm_be); }

}  // namespace lci::net::ibv

#endif  // LCI_NET_IBV_IMM_HPP
