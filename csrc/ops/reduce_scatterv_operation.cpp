// ReduceScatterVOperation: rank r gets the reduction over ranks of their regions [sdispls[r], +sendCounts[r]).
//   param  : reduceType "sum" | "max" | "min"; sendCounts, sdispls, recvCount (accepted as ATB's struct has
//            them; the counts that run are the inputs' or the variant pack's, as in ATB)
//   inputs : x [rows, cols], sendCounts [rankSize] int64, sdispls [rankSize] int64, recvCount [1] int64,
//            y [outRows] (only its length matters)
//   output : [outRows, cols]; its first recvCount elements are written (recvCount == sendCounts[rank]), the
//            rest of execute()'s output is zero
// Counts are in elements of x flattened; every rank passes the same sendCounts and sdispls.

#include "core/layout.h"
#include "core/status.h"
#include "ops/operation_base.h"
#include "ops/operation_registry.h"
#include "ops/variant_pack.h"

namespace atb_ops {
namespace {

class ReduceScatterVOperation final : public CommOperation {
 public:
  ReduceScatterVOperation() : CommOperation("ReduceScatterVOperation") {}

  size_t inputNum() const override { return 5; }
  size_t outputNum() const override { return 1; }

  void setVariantPack(const std::string& json) override {
    pack_.set(parseCountsPack(json, name() + " variant pack", {"sendCounts", "sdispls"}, {"recvCount"}));
  }

  Plan plan(const std::vector<at::Tensor>& inputs) const override {
    checkInputs(inputs, 5);
    const int64_t n = param().rankSize;
    const at::Tensor& x = inputs[0];
    const at::Tensor& y = inputs[4];
    ATB_CHECK(x.dim() == 2, ERROR_INVALID_TENSOR_DIM_NUM, name(), " input x must be 2-D, got shape ", x.sizes());
    ATB_CHECK(y.defined() && y.dim() == 1, ERROR_INVALID_TENSOR_DIM_NUM, name(), " input y must be 1-D, got shape ",
              y.defined() ? y.sizes() : c10::IntArrayRef{});
    const std::shared_ptr<const CountsPack> pack = pack_.get();
    auto scatter = std::make_shared<VCall>();
    VLayout& layout = scatter->layout;
    layout.counts = countInput(inputs[1], "sendCounts", n, pack ? pack->find("sendCounts") : nullptr);
    layout.displs = countInput(inputs[2], "sdispls", n, pack ? pack->find("sdispls") : nullptr);
    const int64_t recvCount = countInput(inputs[3], "recvCount", 1, pack ? pack->find("recvCount") : nullptr)[0];
    validateVLayout(layout, n, x.numel(), /*disjoint=*/false, "sendCounts", "sdispls");
    const int64_t rank = rankIndex();
    ATB_CHECK(recvCount == layout.counts[rank], ERROR_INVALID_PARAM, name(), " recvCount is ", recvCount,
              " but sendCounts[", rank, "] is ", layout.counts[rank], "; rank ", rank, " receives its own region");
    const Shape shape{y.size(0), x.size(1)};
    ATB_CHECK(recvCount <= y.size(0) * x.size(1), ERROR_INVALID_TENSOR_DIM, name(), " recvCount ", recvCount,
              " does not fit the output [", y.size(0), ", ", x.size(1), "] (y's length, x's columns)");
    scatter->count = recvCount;
    return Plan{{TensorDesc{x.scalar_type(), shape}}, std::move(scatter)};
  }

 protected:
  void readParam(JsonFields& fields, const CommParam& common) override {
    const std::string type = fields.string("reduceType", "sum");
    ATB_CHECK(type == "sum" || type == "max" || type == "min", ERROR_INVALID_PARAM, name(), " param 'reduceType' is '",
              type, "'; expected one of sum, max, min");
    op_ = parseReduceOp(type, name() + " param 'reduceType'");
    (void)common;  // rankSize 1 is accepted, as ATB does in effect (its check returns a non-zero "true")
    // ATB's struct carries these too; its runner reads the inputs' host data instead.
    fields.int64Array("sendCounts", {});
    fields.int64Array("sdispls", {});
    fields.int64("recvCount", 0);
  }

  // Elements past recvCount are written by nobody: execute()'s output has them zero, as ATB's binding does.
  at::Tensor allocate(const TensorDesc& desc, const at::Tensor& firstInput) override {
    at::Tensor out = CommOperation::allocate(desc, firstInput);
    out.zero_();
    return out;
  }

  void run(const Plan& planned, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) override {
    const at::Tensor x = inputs[0].contiguous();
    const VCall& scatter = planned.detailAs<VCall>();
    at::Tensor target = outputs[0].view({-1}).narrow(0, 0, scatter.count);
    communicatorFor(x)->reduceScatterV(x, scatter.layout, target, op_);
  }

 private:
  ReduceOp op_ = ReduceOp::kSum;
  VariantPackSlot<CountsPack> pack_;
};

const bool registered = registerOperation("ReduceScatterVOperation",
                                          [] { return std::unique_ptr<Operation>(new ReduceScatterVOperation()); });

}  // namespace
}  // namespace atb_ops
