// AllToAllOperation, with ATB's semantics: x is cut, by its flattened elements, into rankSize equal chunks;
// chunk i goes to rank i, and chunk j of the output (shaped like x) came from rank j.
//   inputs : x [*] with numel % rankSize == 0
//   output : x's shape
// With transpose (backend "lccl", as ATB): x is [m, c] with c % rankSize == 0; column block i (c / rankSize
// columns, every row) goes to rank i, and the output is [m * rankSize, c / rankSize]: rows [j*m, (j+1)*m)
// hold rank j's block.

#include "core/layout.h"
#include "core/options.h"
#include "core/status.h"
#include "ops/operation_base.h"
#include "ops/operation_registry.h"

namespace atb_ops {
namespace {

// LCCL's kernel limits for transpose (ATB's checks): a row's bytes per rank, the whole tensor.
constexpr int64_t kMaxRowBytesPerRank = int64_t{90} << 10;
constexpr int64_t kMaxTransposeBytes = int64_t{190} << 20;

class AllToAllOperation final : public CommOperation {
 public:
  AllToAllOperation() : CommOperation("AllToAllOperation") {}

  size_t inputNum() const override { return 1; }
  size_t outputNum() const override { return 1; }

  Plan plan(const std::vector<at::Tensor>& inputs) const override {
    checkInputs(inputs, 1);
    const at::Tensor& x = inputs[0];
    const int64_t n = param().rankSize;
    if (!transpose_) {
      ATB_CHECK(x.numel() % n == 0, ERROR_INVALID_TENSOR_DIM, name(), " input x has ", x.numel(),
                " elements, which do not split into rankSize=", n, " equal chunks (shape ", x.sizes(), ")");
      return Plan{{TensorDesc{x.scalar_type(), x.sizes().vec()}}};
    }
    ATB_CHECK(x.dim() == 2, ERROR_INVALID_TENSOR_DIM_NUM, name(), " with transpose needs a 2-D x, got shape ",
              x.sizes());
    ATB_CHECK(x.size(1) % n == 0, ERROR_INVALID_TENSOR_DIM, name(), " with transpose needs x.shape[1] divisible by ",
              "rankSize=", n, ", got shape ", x.sizes());
    // ATB's own bound counts 4 bytes per element whatever the dtype (sizeof of its dtype enum).
    ATB_CHECK(x.size(1) * 4 / n < kMaxRowBytesPerRank, ERROR_INVALID_TENSOR_DIM, name(),
              " with transpose: x.shape[1] / rankSize must stay under 90K (LCCL's limit), got shape ", x.sizes());
    ATB_CHECK(static_cast<int64_t>(x.nbytes()) <= kMaxTransposeBytes, ERROR_INVALID_TENSOR_DIM, name(),
              " with transpose: x may hold at most 190 MB (LCCL's limit), got ", x.nbytes(), " bytes");
    return Plan{{TensorDesc{x.scalar_type(), Shape{x.size(0) * n, x.size(1) / n}}}};
  }

 protected:
  bool acceptsLccl() const override { return true; }

  void readParam(JsonFields& fields, const CommParam& common) override {
    transpose_ = fields.boolean("transpose", false);
    ATB_CHECK(!(common.backend == "hccl" && transpose_), ERROR_INVALID_PARAM, name(),
              " backend 'hccl' does not support transpose (ATB: only 'lccl' does)");
    if (common.backend == "lccl" && !transpose_) {
      const std::string npu = readOptions().npuName;
      ATB_CHECK(npu.find("Ascend910_93") != std::string::npos, ERROR_INVALID_PARAM, name(),
                " backend 'lccl' without transpose runs only on an Atlas A3 (ATB: a SoC named 'Ascend910_93...'); the "
                "emulated NPU is ",
                npu.empty() ? std::string("an Atlas A2 ('Ascend910B')") : "'" + npu + "'",
                " (ATB_OPS_NPU_NAME names it); use backend 'hccl', or 'lccl' with transpose: true");
    }
    ATB_CHECK(!(common.backend == "lccl" && common.rankSize % 2 != 0), ERROR_INVALID_PARAM, name(),
              " backend 'lccl' needs an even rankSize, got ", common.rankSize);
  }

  void run(const Plan&, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) override {
    const int64_t n = param().rankSize;
    at::Tensor x = inputs[0];
    if (transpose_) {
      // Column block i of every row, packed: [rankSize, m, c / rankSize].
      x = x.view({x.size(0), n, x.size(1) / n}).transpose(0, 1).contiguous();
    } else {
      x = x.contiguous();
    }
    const int64_t chunk = x.numel() / n;
    // The last layout this thread used, rebuilt only when the split changes: four vectors fewer per call.
    thread_local AllToAllVLayout layout;
    if (static_cast<int64_t>(layout.sendCounts.size()) != n || layout.sendCounts[0] != chunk) {
      layout = equalSplitLayout(n, chunk);
    }
    communicatorFor(x)->alltoallv(x, layout, outputs[0]);
  }

 private:
  bool transpose_ = false;
};

const bool registered =
    registerOperation("AllToAllOperation", [] { return std::unique_ptr<Operation>(new AllToAllOperation()); });

}  // namespace
}  // namespace atb_ops
