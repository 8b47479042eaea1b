#include "net/shm/jobs.hpp"

#include <algorithm>

#include "net/shm/wire.hpp"

namespace lci::net::shm
{

void job_engine_t::add(const tx_job_t& j)
{
  tx_[j.rank].njobs.fetch_add(1, std::memory_order_relaxed);
  {
    util::spin_guard_t g(lock_);
    jobs_.push_back(j);
    n_.store(jobs_.size(), std::memory_order_relaxed);
  }
  run();
}

void job_engine_t::run()
{
  if (!lock_.try_lock()) return;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (run_one(*it)) {
      tx_[it->rank].njobs.fetch_sub(1, std::memory_order_release);
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
  n_.store(jobs_.size(), std::memory_order_relaxed);
  lock_.unlock();
}

size_t job_engine_t::size()
{
  util::spin_guard_t g(lock_);
  return jobs_.size();
}

bool job_engine_t::run_one(tx_job_t& j)
{
  tx_ring_t& t = tx_[j.rank];
  if (!t.lock.try_lock()) return false;
  bool pushed = false;
  if (j.type == kWriteAck) {
    if (t.prod.push(kWriteAck, &j.ctx, sizeof(j.ctx))) {
      pushed = true;
      j.remaining = 0;
    }
  } else {
    // at least one chunk per job (a 0-byte transfer still completes)
    do {
      size_t len = static_cast<size_t>(std::min<uint64_t>(j.remaining, chunk_));
      chunk_hdr_t h{j.dst, j.ctx, j.imm, 0, 0};
      if (len == j.remaining) h.flags |= kLast;
      if (j.has_imm) h.flags |= kHasImm;
      if (!t.prod.push(j.type, &h, sizeof(h), j.src, len)) break;
      pushed = true;
      j.src += len;
      j.dst += len;
      j.remaining -= len;
      if (h.flags & kLast) {
        j.type = 0;  // done
        break;
      }
    } while (true);
  }
  if (pushed) t.ring_bell();
  t.lock.unlock();
  return j.type == 0 || (j.type == kWriteAck && j.remaining == 0);
}

}  // namespace lci::net::shm
