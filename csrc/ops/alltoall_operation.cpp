// AllToAllOperation: equal splits on dim 0; chunk i of the output comes from rank i.
//   inputs : x [d0, *] with d0 % rankSize == 0
//   output : same shape as x

#include "core/layout.h"
#include "core/status.h"
#include "ops/operation.h"
#include "ops/operation_registry.h"

namespace atb_ops {
namespace {

class AllToAllOperation final : public CommOperation {
 public:
  AllToAllOperation() : CommOperation("AllToAllOperation") {}

  std::vector<Shape> inferShape(const std::vector<at::Tensor>& inputs) const override {
    checkInputCount(inputs, 1);
    const at::Tensor& x = inputs[0];
    const int32_t n = param().rankSize;
    ATB_CHECK(x.dim() >= 1 && x.size(0) % n == 0, ERROR_INVALID_TENSOR_DIM, name(),
              " input x needs dim 0 divisible by rankSize=", n, ", got shape ", x.sizes());
    return {x.sizes().vec()};
  }

  std::vector<at::Tensor> execute(const std::vector<at::Tensor>& inputs) override {
    inferShape(inputs);
    const at::Tensor x = inputs[0].contiguous();
    at::Tensor out = communicatorFor(x)->emptyOutput(x.sizes(), x.options());
    run(x, out);
    return {out};
  }

  void executeOut(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) override {
    const Shape shape = inferShape(inputs).front();
    const at::Tensor x = inputs[0].contiguous();
    ATB_CHECK(outputs.size() == 1, ERROR_INVALID_PARAM, name(), " takes 1 output tensor, got ", outputs.size());
    checkOutput(outputs[0], shape, x);
    at::Tensor out = outputs[0];
    run(x, out);
  }

 private:
  void run(const at::Tensor& x, at::Tensor& out) const {
    const int32_t n = param().rankSize;
    const AllToAllVLayout layout = equalSplitLayout(n, x.numel() / n);
    validateLayout(layout, n, x.numel(), out.numel());
    communicatorFor(x)->alltoallv(x, layout, out);
  }
};

const bool registered =
    registerOperation("AllToAllOperation", [] { return std::unique_ptr<Operation>(new AllToAllOperation()); });

}  // namespace
}  // namespace atb_ops
