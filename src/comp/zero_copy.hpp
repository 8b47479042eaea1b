// Completion objects allocated with zero_copy_am(true) (upstream LCI 2's
// option, paper 3.3.1): an eager active message they receive is delivered
// in the packet it arrived in (the status's buffer is a user packet, given
// back with put_upacket) instead of a copy from the runtime's allocator.
// The progress engine asks for every active message, so the common case
// (no such object in the process) is one relaxed load.
#ifndef LCI_COMP_ZERO_COPY_HPP
#define LCI_COMP_ZERO_COPY_HPP

#include <atomic>

#include "lci.hpp"

namespace lci::comp
{

extern std::atomic<int> g_nzero_copy;

void add_zero_copy(const comp_impl_t* c);
// (free_comp: forgets c if it was one)
void forget_zero_copy(const comp_impl_t* c);
bool is_zero_copy_slow(const comp_impl_t* c);

inline bool is_zero_copy(const comp_impl_t* c)
{
  return __builtin_expect(g_nzero_copy.load(std::memory_order_relaxed) != 0,
                          0) &&
         is_zero_copy_slow(c);
}

}  // namespace lci::comp

#endif  // LCI_COMP_ZERO_COPY_HPP
