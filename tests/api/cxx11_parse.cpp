// Built as C++11: the public header must parse for older clients. Also
// exercises the OFF idiom: optional arguments chained in any order on a
// stored object, then called.
#include <lci.hpp>

int main()
{
  lci::post_send_x send(0, nullptr, 0, 1, lci::COMP_NULL);
  send.allow_done(false)
      .device(lci::device_t())
      .matching_policy(lci::matching_policy_t::rank_only);
  lci::post_am_x am(0, nullptr, 0, lci::COMP_NULL, 0);
  am.tag(3).allow_retry(false);
  lci::alloc_device_x dev;
  dev.net_max_recvs(16).runtime(lci::runtime_t());
  return send.allow_done_ ? 1 : 0;  // setters modify in place
}
