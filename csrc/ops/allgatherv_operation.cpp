// AllGatherVOperation: every rank's first sendCount elements of x, placed at rdispls[rank] of the output.
//   inputs : x [*], sendCount [1] int64, recvCounts [rankSize] int64, rdispls [rankSize] int64,
//            y [outRows] (only its length matters)
//   output : x's shape with dim 0 = outRows; elements no rank writes are zero in execute()'s output
// Counts and displacements are in elements (flattened); recvCounts[rank] == sendCount; every rank passes the
// same recvCounts and rdispls; sum(recvCounts) > 0 (ATB).

#include "core/layout.h"
#include "core/status.h"
#include "ops/operation_base.h"
#include "ops/operation_registry.h"
#include "ops/variant_pack.h"

namespace atb_ops {
namespace {

class AllGatherVOperation final : public CommOperation {
 public:
  AllGatherVOperation() : CommOperation("AllGatherVOperation") {}

  size_t inputNum() const override { return 5; }
  size_t outputNum() const override { return 1; }

  void setVariantPack(const std::string& json) override {
    pack_.set(parseCountsPack(json, name() + " variant pack", {"recvCounts", "rdispls"}, {"sendCount"}));
  }

  Plan plan(const std::vector<at::Tensor>& inputs) const override {
    checkInputs(inputs, 5);
    const int64_t n = param().rankSize;
    const at::Tensor& x = inputs[0];
    const at::Tensor& y = inputs[4];
    ATB_CHECK(x.dim() >= 1, ERROR_INVALID_TENSOR_DIM_NUM, name(), " input x needs at least 1 dimension");
    ATB_CHECK(y.defined() && y.dim() == 1, ERROR_INVALID_TENSOR_DIM_NUM, name(), " input y must be 1-D, got shape ",
              y.defined() ? y.sizes() : c10::IntArrayRef{});
    const std::shared_ptr<const CountsPack> pack = pack_.get();
    auto gather = std::make_shared<VCall>();
    const int64_t sendCount = countInput(inputs[1], "sendCount", 1, pack ? pack->find("sendCount") : nullptr)[0];
    VLayout& layout = gather->layout;
    layout.counts = countInput(inputs[2], "recvCounts", n, pack ? pack->find("recvCounts") : nullptr);
    layout.displs = countInput(inputs[3], "rdispls", n, pack ? pack->find("rdispls") : nullptr);
    Shape shape = x.sizes().vec();
    shape[0] = y.size(0);
    int64_t outNumel = 1;
    for (int64_t s : shape) outNumel *= s;
    ATB_CHECK(sendCount >= 0 && sendCount <= x.numel(), ERROR_INVALID_TENSOR_DIM, name(), " sendCount ", sendCount,
              " must be in [0, x.numel()=", x.numel(), "]");
    validateVLayout(layout, n, outNumel, /*disjoint=*/true, "recvCounts", "rdispls");
    const int64_t rank = rankIndex();
    ATB_CHECK(layout.counts[rank] == sendCount, ERROR_INVALID_PARAM, name(), " recvCounts[", rank,
              "]=", layout.counts[rank], " must equal this rank's sendCount ", sendCount);
    ATB_CHECK(layout.total() > 0, ERROR_INVALID_PARAM, name(), " sum(recvCounts) must be > 0 (ATB), got ",
              c10::IntArrayRef(layout.counts));
    gather->count = sendCount;
    return Plan{{TensorDesc{x.scalar_type(), shape}}, std::move(gather)};
  }

 protected:
  // ATB refuses rankSize 1 here; a one-rank gather is a well-defined copy (and ATB's own test runs one), so
  // atb_ops accepts it (README: differences from ATB).
  void readParam(JsonFields&, const CommParam&) override {}

  CommParam defaults() const override { return CommParam{}; }  // rank -1, as ATB's AllGatherVParam

  at::Tensor allocate(const TensorDesc& desc, const at::Tensor& firstInput) override {
    at::Tensor out = CommOperation::allocate(desc, firstInput);
    out.zero_();
    return out;
  }

  void run(const Plan& planned, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) override {
    const VCall& gather = planned.detailAs<VCall>();
    const at::Tensor x = inputs[0].contiguous().view({-1}).narrow(0, 0, gather.count);
    at::Tensor out = outputs[0].view({-1});
    communicatorFor(x)->allgatherv(x, gather.layout, out);
  }

 private:
  VariantPackSlot<CountsPack> pack_;
};

const bool registered =
    registerOperation("AllGatherVOperation", [] { return std::unique_ptr<Operation>(new AllGatherVOperation()); });

}  // namespace
}  // namespace atb_ops
