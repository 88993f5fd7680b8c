// AllGatherOperation: every rank's x, stacked in rank order.
//   inputs : x [*]
//   output : [rankSize, *x.shape]

#include "core/status.h"
#include "ops/operation.h"
#include "ops/operation_registry.h"

namespace atb_ops {
namespace {

class AllGatherOperation final : public CommOperation {
 public:
  AllGatherOperation() : CommOperation("AllGatherOperation") {}

  std::vector<Shape> inferShape(const std::vector<at::Tensor>& inputs) const override {
    checkInputCount(inputs, 1);
    Shape shape{param().rankSize};
    for (int64_t s : inputs[0].sizes()) shape.push_back(s);
    return {shape};
  }

  std::vector<at::Tensor> execute(const std::vector<at::Tensor>& inputs) override {
    const Shape shape = inferShape(inputs).front();
    const at::Tensor x = inputs[0].contiguous();
    const auto comm = communicatorFor(x);
    at::Tensor out = comm->emptyOutput(shape, x.options());
    comm->allgather(x, out);
    return {out};
  }

  void executeOut(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) override {
    const Shape shape = inferShape(inputs).front();
    const at::Tensor x = inputs[0].contiguous();
    ATB_CHECK(outputs.size() == 1, ERROR_INVALID_PARAM, name(), " takes 1 output tensor, got ", outputs.size());
    checkOutput(outputs[0], shape, x);
    at::Tensor out = outputs[0];
    communicatorFor(x)->allgather(x, out);
  }
};

const bool registered =
    registerOperation("AllGatherOperation", [] { return std::unique_ptr<Operation>(new AllGatherOperation()); });

}  // namespace
}  // namespace atb_ops
