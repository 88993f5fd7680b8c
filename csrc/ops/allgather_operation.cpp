// AllGatherOperation: every rank's x, stacked in rank order.
//   inputs : x [*]
//   output : [rankSize, *x.shape]
// Backends: hccl, lccl (ATB's), and every atb_ops backend.

#include "core/status.h"
#include "ops/operation_base.h"
#include "ops/operation_registry.h"

namespace atb_ops {
namespace {

class AllGatherOperation final : public CommOperation {
 public:
  AllGatherOperation() : CommOperation("AllGatherOperation") {}

  size_t inputNum() const override { return 1; }
  size_t outputNum() const override { return 1; }

  Plan plan(const std::vector<at::Tensor>& inputs) const override {
    checkInputs(inputs, 1);
    ATB_CHECK(inputs[0].dim() <= 7, ERROR_INVALID_TENSOR_DIM, name(), " input x may have at most 7 dimensions ",
              "(the output adds one; ATB allows 8), got shape ", inputs[0].sizes());
    Shape shape{param().rankSize};
    for (int64_t s : inputs[0].sizes()) shape.push_back(s);
    return Plan{{TensorDesc{inputs[0].scalar_type(), shape}}};
  }

 protected:
  void readParam(JsonFields&, const CommParam&) override {}
  bool acceptsLccl() const override { return true; }

  void run(const Plan&, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) override {
    const at::Tensor x = inputs[0].contiguous();
    communicatorFor(x)->allgather(x, outputs[0]);
  }
};

const bool registered =
    registerOperation("AllGatherOperation", [] { return std::unique_ptr<Operation>(new AllGatherOperation()); });

}  // namespace
}  // namespace atb_ops
