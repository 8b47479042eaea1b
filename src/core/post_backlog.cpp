// Posts that would return retry while the caller forbids it
// (allow_retry(false)): queued in the device's backlog, which progress posts
// in order.
#include <memory>
#include <vector>

#include "core/peer_failure.hpp"
#include "core/post_internal.hpp"
#include "core/rendezvous.hpp"
#include "core/rma.hpp"

namespace lci
{

namespace
{

// The completion of a backlogged copy of a network send: reports the user's
// buffer rather than the copy's, then deletes itself (it fires once).
class origin_buffer_comp_t final : public comp_impl_t
{
 public:
  origin_buffer_comp_t(comp_impl_t* comp, void* buffer)
      : comp_(comp), buffer_(buffer)
  {
  }
  void signal(status_t s) override
  {
    s.buffer = buffer_;
    comp_impl_t* comp = comp_;
    delete this;
    comp->signal(s);
  }

 private:
  comp_impl_t* comp_;
  void* buffer_;
};

}  // namespace

status_t post_backlog(const post_args_t& a, post_path_t path, direction_t dir,
                      comp_impl_t* comp, bool signal)
{
  status_t result = done_status(a);
  if (path == post_path_t::eager) {
    post_args_t queued = a;
    std::shared_ptr<std::vector<char>> data;
    if (a.upacket) {
      // a user packet is queued itself: from here on it is the library's
      a.upacket->user_owned.store(false, std::memory_order_relaxed);
    } else {
      data = std::make_shared<std::vector<char>>(
          static_cast<char*>(a.buffer), static_cast<char*>(a.buffer) + a.size);
      queued.buffer = data->data();
    }
    if (a.semantic == comp_semantic_t::network) {
      signal = false;
      if (!a.upacket) queued.comp = new origin_buffer_comp_t(comp, a.buffer);
    }
    a.dev->backlog.push([queued, data, comp, signal, result]() -> error_t {
      if (peer_is_failed(queued.rt, queued.rank)) {
        // never sent: a user packet goes back to its pool; whoever waits
        // for a signal gets the failure
        if (queued.upacket) packet_pool_impl_t::put(queued.upacket);
        note_peer_failure_felt(queued.rt, queued.rank);
        status_t f = peer_failure_status(queued.rank, result.buffer, result.tag,
                                         result.user_context);
        if (queued.semantic == comp_semantic_t::network && queued.comp)
          queued.comp->signal(f);
        else if (signal)
          comp->signal(f);
        return errorcode_t::done;
      }
      status_t s = post_out(queued);
      if (s.is_retry()) return s.error;
      if (signal) {
        status_t done = result;
        done.error = errorcode_t::done;
        comp->signal(done);
      }
      return errorcode_t::done;
    });
    result.error = signal || a.semantic == comp_semantic_t::network
                       ? errorcode_t::posted_backlog
                       : errorcode_t::done_backlog;
  } else {
    a.dev->backlog.push([a, path, dir, comp, result]() -> error_t {
      if (peer_is_failed(a.rt, a.rank)) {
        note_peer_failure_felt(a.rt, a.rank);
        comp->signal(peer_failure_status(a.rank, result.buffer, result.tag,
                                         result.user_context));
        return errorcode_t::done;
      }
      status_t s;
      try {
        s = path == post_path_t::rendezvous ? post_rdv(a, comp)
                                            : post_rma(a, dir, comp);
      } catch (const peer_failure_error&) {
        // the target failed between the check above and the post: the
        // post took nothing, and its completion must still say so
        note_peer_failure_felt(a.rt, a.rank);
        comp->signal(peer_failure_status(a.rank, result.buffer, result.tag,
                                         result.user_context));
        return errorcode_t::done;
      }
      if (s.is_retry()) return s.error;
      if (s.is_done()) comp->signal(result);  // nothing to move
      return errorcode_t::done;
    });
    result.error = errorcode_t::posted_backlog;
  }
  return result;
}

}  // namespace lci
