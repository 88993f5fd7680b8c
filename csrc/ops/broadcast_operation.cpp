// BroadcastOperation: rankRoot's x is copied into x on every rank, in place.
//   inputs : x [*] (same shape and dtype on every rank)
//   outputs: none (execute returns an empty list, as ATB's binding does; read x afterwards)

#include <ATen/MemoryOverlap.h>

#include "core/status.h"
#include "ops/operation_base.h"
#include "ops/operation_registry.h"

namespace atb_ops {
namespace {

class BroadcastOperation final : public CommOperation {
 public:
  BroadcastOperation() : CommOperation("BroadcastOperation") {}

  size_t inputNum() const override { return 1; }
  size_t outputNum() const override { return 0; }

  Plan plan(const std::vector<at::Tensor>& inputs) const override {
    checkInputs(inputs, 1);
    // The result is written back into x, which an expanded view cannot hold: refused before any data moves.
    ATB_CHECK(at::has_internal_overlap(inputs[0]) != at::MemOverlap::Yes, ERROR_INVALID_PARAM, name(),
              " input x of shape ", inputs[0].sizes(), " and strides ", inputs[0].strides(),
              " has elements that share memory (an expanded view); the broadcast writes its result into x: pass a "
              "tensor of its own (x.contiguous())");
    return {};
  }

 protected:
  bool acceptsLccl() const override { return true; }
  void readParam(JsonFields&, const CommParam&) override {}

  void run(const Plan&, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>&) override {
    at::Tensor x = inputs[0];
    // A strided x is received into a contiguous copy and written back, so the caller's tensor holds the result.
    at::Tensor buffer = x.is_contiguous() ? x : x.contiguous();
    communicatorFor(buffer)->broadcast(buffer, param().rankRoot);
    if (!buffer.is_same(x)) x.copy_(buffer);
  }
};

const bool registered =
    registerOperation("BroadcastOperation", [] { return std::unique_ptr<Operation>(new BroadcastOperation()); });

}  // namespace
}  // namespace atb_ops
