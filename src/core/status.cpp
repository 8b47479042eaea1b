#include "lci.hpp"

namespace lci
{

const char* get_errorcode_str(errorcode_t code)
{
  switch (code) {
    case errorcode_t::done:
      return "done";
    case errorcode_t::done_backlog:
      return "done_backlog";
    case errorcode_t::posted:
      return "posted";
    case errorcode_t::posted_backlog:
      return "posted_backlog";
    case errorcode_t::retry:
      return "retry";
    case errorcode_t::retry_init:
      return "retry_init";
    case errorcode_t::retry_lock:
      return "retry_lock";
    case errorcode_t::retry_nopacket:
      return "retry_nopacket";
    case errorcode_t::retry_nomem:
      return "retry_nomem";
    case errorcode_t::retry_backlog:
      return "retry_backlog";
    case errorcode_t::fatal:
      return "fatal";
    case errorcode_t::fatal_peer_failure:
      return "fatal_peer_failure";
    default:
      return "(range marker)";
  }
}

}  // namespace lci
