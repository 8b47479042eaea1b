// A distributed array: each rank owns a block of `block` integers in
// registered memory and publishes its remote handle (rmr_t) with an
// allgather. Every rank then writes its rank number into one element of
// every block with post_put, waits on a barrier, and reads the whole array
// back with post_get: element (owner b, slot r) must hold r.
//
//   lcrun -n 4 ./distributed_array
#include <cstdio>
#include <lci.hpp>
#include <vector>

int main()
{
  lci::g_runtime_init();
  const int rank = lci::get_rank_me(), n = lci::get_rank_n();
  const size_t block = static_cast<size_t>(n);  // one slot per writer

  std::vector<int> mine(block, -1);
  lci::mr_t mr = lci::register_memory(mine.data(), block * sizeof(int));
  // every rank's handle of its block
  lci::rmr_t my_rmr = lci::get_rmr(mr);
  std::vector<lci::rmr_t> rmrs(n);
  lci::allgather(&my_rmr, rmrs.data(), sizeof(lci::rmr_t));

  // put my rank into slot `rank` of every block; COMP_NULL with the
  // network semantic: each call returns once the data is at the target
  for (int owner = 0; owner < n; ++owner) {
    lci::status_t s;
    do {
      s = lci::post_put_x(owner, const_cast<int*>(&rank), sizeof(int),
                          lci::COMP_NULL, rank * sizeof(int), rmrs[owner])
              .comp_semantic(lci::comp_semantic_t::network)();
      if (s.is_retry()) lci::progress();
    } while (s.is_retry());
  }
  lci::barrier();

  // read every block with one get per owner, completed by one synchronizer
  std::vector<int> all(block * n, -2);
  lci::comp_t sync = lci::alloc_sync_x().threshold(n)();
  for (int owner = 0; owner < n; ++owner) {
    lci::status_t s;
    do {
      s = lci::post_get(owner, &all[owner * block], block * sizeof(int), sync,
                        0, rmrs[owner]);
      if (s.is_retry()) lci::progress();
    } while (s.is_retry());
    if (s.is_done()) lci::comp_signal(sync, s);
  }
  lci::sync_wait(sync, nullptr);
  lci::free_comp(&sync);

  int errors = 0;
  for (int owner = 0; owner < n; ++owner)
    for (size_t slot = 0; slot < block; ++slot)
      if (all[owner * block + slot] != static_cast<int>(slot)) ++errors;
  lci::barrier();  // nobody reads my block any more
  lci::deregister_memory(&mr);
  std::printf("distributed_array: rank %d of %d: %zu elements read, %d wrong\n",
              rank, n, all.size(), errors);
  lci::g_runtime_fina();
  return errors == 0 ? 0 : 1;
}
