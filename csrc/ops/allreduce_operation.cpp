// AllReduceOperation: the elementwise reduction of x over the ranks.
//   param  : allReduceType "sum" | "prod" | "max" | "min"; quantType 0 (none), 1 (per tensor), 2 (per channel);
//            outDataType (aclDataType) of a quantised reduction
//   inputs : x; with quantType 1/2: x int8 [..., n], scale ([1] per tensor; [n] or [1, n] per channel), offset [1]
//   output : x's shape; x's dtype, or outDataType when quantised:
//            (sum_r x_r + offset * rankSize) * scale, through seed 004's int8 pipeline (quant/int8_all_reduce.h)
// ATB allows quantisation only on backend "lccl" (and float16 output); here any CPU/CUDA backend runs it too,
// and outDataType may also be ACL_BF16.

#include "core/acl_codes.h"
#include "core/status.h"
#include "ops/operation_base.h"
#include "ops/operation_registry.h"
#include "quant/int8_all_reduce.h"

namespace atb_ops {
namespace {

constexpr int32_t kUnquant = 0;
constexpr int32_t kPerTensor = 1;
constexpr int32_t kPerChannel = 2;
constexpr int64_t kMaxChannels = int64_t{1} << 22;

class AllReduceOperation final : public CommOperation {
 public:
  AllReduceOperation() : CommOperation("AllReduceOperation") {}

  size_t inputNum() const override { return quantized() ? 3 : 1; }
  size_t outputNum() const override { return 1; }

  Plan plan(const std::vector<at::Tensor>& inputs) const override {
    checkInputs(inputs, inputNum());
    const at::Tensor& x = inputs[0];
    checkDtype(x);
    if (!quantized()) return Plan{{TensorDesc{x.scalar_type(), x.sizes().vec()}}};
    checkQuantInputs(inputs);
    return Plan{{TensorDesc{outDtype(), x.sizes().vec()}}};
  }

 protected:
  bool acceptsLccl() const override { return true; }

  void readParam(JsonFields& fields, const CommParam& common) override {
    opName_ = fields.string("allReduceType", "sum");
    quantType_ = fields.int32("quantType", kUnquant);
    outDataType_ = fields.int32("outDataType", acl::kDtUndefined);
    ATB_CHECK(opName_ == "sum" || opName_ == "prod" || opName_ == "max" || opName_ == "min", ERROR_INVALID_PARAM,
              name(), " param 'allReduceType' is '", opName_, "'; expected one of sum, prod, max, min");
    op_ = parseReduceOp(opName_, name() + " param 'allReduceType'");
    ATB_CHECK(!(common.backend == "lccl" && op_ == ReduceOp::kProd), ERROR_INVALID_PARAM, name(),
              " backend 'lccl' does not support allReduceType 'prod'");
    ATB_CHECK(quantType_ >= kUnquant && quantType_ <= kPerChannel, ERROR_INVALID_PARAM, name(),
              " param 'quantType' is ", quantType_, "; expected 0 (none), 1 (per tensor) or 2 (per channel)");
    if (quantType_ == kUnquant) return;
    ATB_CHECK(common.backend != "hccl", ERROR_INVALID_PARAM, name(), " quantType ", quantType_,
              " is not supported with backend 'hccl' (ATB quantises only on 'lccl')");
    ATB_CHECK(op_ == ReduceOp::kSum, ERROR_INVALID_PARAM, name(),
              " a quantised all-reduce must use allReduceType "
              "'sum', got '",
              opName_, "'");
    ATB_CHECK(outDataType_ == acl::kFloat16 || outDataType_ == acl::kBf16, ERROR_INVALID_PARAM, name(),
              " param 'outDataType' is ", outDataType_,
              "; a quantised all-reduce needs 1 (ACL_FLOAT16) or 27 (ACL_BF16)");
  }

  void run(const Plan&, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) override {
    const at::Tensor x = inputs[0].contiguous();
    const auto comm = communicatorFor(x);
    if (!quantized()) {
      comm->allreduce(x, outputs[0], op_);
      return;
    }
    quant::Int8AllReduceArgs args;
    args.scale = inputs[1].reshape({-1}).to(x.device(), at::kFloat);
    args.perChannel = quantType_ == kPerChannel;
    args.offset = inputs[2].reshape({-1})[0].to(at::kDouble).item<double>();
    args.outDtype = outDtype();
    outputs[0].copy_(quant::int8AllReduce(*comm, x, args));
  }

 private:
  bool quantized() const { return quantType_ != kUnquant; }
  c10::ScalarType outDtype() const { return outDataType_ == acl::kBf16 ? at::kBFloat16 : at::kHalf; }

  // ATB's dtype rules for its own backends (the emulated device is an Atlas A2, "Ascend910B").
  void checkDtype(const at::Tensor& x) const {
    if (param().backend == "lccl") {
      ATB_CHECK(x.scalar_type() != at::kLong, ERROR_INVALID_TENSOR_DTYPE, name(),
                " backend 'lccl' does not support int64 x");
    }
    if (param().backend == "hccl" && op_ == ReduceOp::kProd) {
      ATB_CHECK(x.scalar_type() != at::kShort && x.scalar_type() != at::kBFloat16, ERROR_INVALID_TENSOR_DTYPE, name(),
                " backend 'hccl' with allReduceType 'prod' does not support ", x.scalar_type(), " x");
    }
  }

  void checkQuantInputs(const std::vector<at::Tensor>& inputs) const {
    const at::Tensor& x = inputs[0];
    const at::Tensor& scale = inputs[1];
    const at::Tensor& offset = inputs[2];
    ATB_CHECK(x.scalar_type() == at::kChar, ERROR_INVALID_TENSOR_DTYPE, name(), " quantType ", quantType_,
              " needs an int8 x, got ", x.scalar_type());
    ATB_CHECK(scale.defined() && offset.defined(), ERROR_INVALID_PARAM, name(), " scale and offset must be tensors");
    ATB_CHECK(at::isFloatingType(scale.scalar_type()) && at::isFloatingType(offset.scalar_type()),
              ERROR_INVALID_TENSOR_DTYPE, name(), " scale and offset must be floating, got ", scale.scalar_type(),
              " and ", offset.scalar_type());
    ATB_CHECK(x.dim() >= 1, ERROR_INVALID_TENSOR_DIM, name(), " quantised x needs at least 1 dimension");
    const int64_t n = x.size(-1);
    ATB_CHECK(n % 16 == 0, ERROR_INVALID_TENSOR_DIM, name(), " quantised x needs its last dimension a multiple of 16, ",
              "got shape ", x.sizes());
    ATB_CHECK(offset.dim() == 1 && offset.size(0) == 1, ERROR_INVALID_TENSOR_DIM, name(),
              " offset must have shape [1], got ", offset.sizes());
    ATB_CHECK(scale.dim() <= 2, ERROR_INVALID_TENSOR_DIM_NUM, name(), " scale may have at most 2 dimensions, got ",
              scale.sizes());
    if (quantType_ == kPerTensor) {
      ATB_CHECK(scale.dim() == 1 && scale.size(0) == 1, ERROR_INVALID_TENSOR_DIM, name(),
                " per-tensor scale must have shape [1], got ", scale.sizes());
      return;
    }
    ATB_CHECK(n <= kMaxChannels, ERROR_INVALID_TENSOR_DIM, name(),
              " per-channel quantisation allows at most 2^22 "
              "channels, got ",
              n);
    const bool flat = scale.dim() == 1 && scale.size(0) == n;
    const bool row = scale.dim() == 2 && scale.size(0) == 1 && scale.size(1) == n;
    ATB_CHECK(flat || row, ERROR_INVALID_TENSOR_DIM, name(), " per-channel scale must have shape [", n, "] or [1, ", n,
              "] (x.shape[-1]), got ", scale.sizes());
  }

  std::string opName_ = "sum";
  ReduceOp op_ = ReduceOp::kSum;
  int32_t quantType_ = kUnquant;
  int32_t outDataType_ = acl::kDtUndefined;
};

const bool registered =
    registerOperation("AllReduceOperation", [] { return std::unique_ptr<Operation>(new AllReduceOperation()); });

}  // namespace
}  // namespace atb_ops
