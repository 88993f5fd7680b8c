// ReduceScatterOperation: rank r gets the reduction over ranks of chunk r of x's dim 0.
//   param  : reduceType "sum" | "prod" | "max" | "min" (ATB's default backend here is "lccl")
//   inputs : x [rankSize * a, *]
//   output : [a, *]

#include "core/status.h"
#include "ops/operation_base.h"
#include "ops/operation_registry.h"

namespace atb_ops {
namespace {

class ReduceScatterOperation final : public CommOperation {
 public:
  ReduceScatterOperation() : CommOperation("ReduceScatterOperation") {}

  size_t inputNum() const override { return 1; }
  size_t outputNum() const override { return 1; }

  Plan plan(const std::vector<at::Tensor>& inputs) const override {
    checkInputs(inputs, 1);
    const at::Tensor& x = inputs[0];
    const int64_t n = param().rankSize;
    ATB_CHECK(x.dim() >= 1 && x.size(0) % n == 0, ERROR_INVALID_TENSOR_DIM, name(),
              " input x needs dim 0 divisible by rankSize=", n, ", got shape ", x.sizes());
    if (param().backend == "lccl") {
      ATB_CHECK(x.scalar_type() != at::kLong, ERROR_INVALID_TENSOR_DTYPE, name(),
                " backend 'lccl' does not support int64 x");
    }
    if (param().backend == "hccl" && op_ == ReduceOp::kProd) {
      ATB_CHECK(x.scalar_type() != at::kShort && x.scalar_type() != at::kBFloat16, ERROR_INVALID_TENSOR_DTYPE, name(),
                " backend 'hccl' with reduceType 'prod' does not support ", x.scalar_type(), " x");
    }
    Shape shape = x.sizes().vec();
    shape[0] /= n;
    return Plan{{TensorDesc{x.scalar_type(), shape}}};
  }

 protected:
  bool acceptsLccl() const override { return true; }

  CommParam defaults() const override {
    CommParam p = CommOperation::defaults();
    p.backend = "lccl";
    return p;
  }

  void readParam(JsonFields& fields, const CommParam& common) override {
    const std::string type = fields.string("reduceType", "sum");
    op_ = parseReduceOp(type, name() + " param 'reduceType'");
    ATB_CHECK(!(common.backend == "lccl" && op_ == ReduceOp::kProd), ERROR_INVALID_PARAM, name(),
              " backend 'lccl' does not support reduceType 'prod'");
  }

  void run(const Plan&, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) override {
    const at::Tensor x = inputs[0].contiguous();
    communicatorFor(x)->reduceScatter(x, outputs[0], op_);
  }

 private:
  ReduceOp op_ = ReduceOp::kSum;
};

const bool registered = registerOperation("ReduceScatterOperation",
                                          [] { return std::unique_ptr<Operation>(new ReduceScatterOperation()); });

}  // namespace
}  // namespace atb_ops
