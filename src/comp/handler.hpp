// Handler: a function run on every signal, on the signalling thread (inside
// progress, or inside the posting call). Thread safety: any-thread; the
// function must be safe to run concurrently with itself.
#ifndef LCI_COMP_HANDLER_HPP
#define LCI_COMP_HANDLER_HPP

#include "lci.hpp"

namespace lci
{

class handler_impl_t final : public comp_impl_t
{
 public:
  explicit handler_impl_t(comp_handler_t fn) : fn_(fn) {}
  void signal(status_t status) override { fn_(status); }

 private:
  comp_handler_t fn_;
};

}  // namespace lci

#endif  // LCI_COMP_HANDLER_HPP
