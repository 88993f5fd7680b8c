// AllToAllVOperation: ATB's older variable all-to-all, its counts and displacements fixed in the param.
//   param  : sendCounts, sdispls, recvCounts, rdispls [rankSize] (elements of x flattened)
//   inputs : x [*]
//   output : [1, sum(recvCounts)]

#include "core/layout.h"
#include "core/status.h"
#include "ops/operation_base.h"
#include "ops/operation_registry.h"

namespace atb_ops {
namespace {

class AllToAllVOperation final : public CommOperation {
 public:
  AllToAllVOperation() : CommOperation("AllToAllVOperation") {}

  size_t inputNum() const override { return 1; }
  size_t outputNum() const override { return 1; }

  Plan plan(const std::vector<at::Tensor>& inputs) const override {
    checkInputs(inputs, 1);
    const int64_t total = validateLayout(layout_, param().rankSize, inputs[0].numel());
    return Plan{{TensorDesc{inputs[0].scalar_type(), Shape{1, total}}}};
  }

 protected:
  void readParam(JsonFields& fields, const CommParam& common) override {
    layout_.sendCounts = fields.int64Array("sendCounts", {});
    layout_.sdispls = fields.int64Array("sdispls", {});
    layout_.recvCounts = fields.int64Array("recvCounts", {});
    layout_.rdispls = fields.int64Array("rdispls", {});
    // The sizes and signs now (ATB's creation checks); the regions against x at execute.
    const AllToAllVLayout& l = layout_;
    const size_t n = static_cast<size_t>(common.rankSize);
    ATB_CHECK(l.sendCounts.size() == n && l.sdispls.size() == n && l.recvCounts.size() == n && l.rdispls.size() == n,
              ERROR_INVALID_PARAM, name(), " param sendCounts, sdispls, recvCounts and rdispls need rankSize=", n,
              " entries each, got ", l.sendCounts.size(), ", ", l.sdispls.size(), ", ", l.recvCounts.size(), ", ",
              l.rdispls.size());
    const int64_t total = validateLayout(l, common.rankSize, INT64_MAX);
    ATB_CHECK(total > 0, ERROR_INVALID_PARAM, name(), " param sum(recvCounts) must be > 0 (ATB), got ",
              c10::IntArrayRef(l.recvCounts));
  }

  void run(const Plan&, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) override {
    const at::Tensor x = inputs[0].contiguous();
    communicatorFor(x)->alltoallv(x, layout_, outputs[0]);
  }

 private:
  AllToAllVLayout layout_;
};

const bool registered =
    registerOperation("AllToAllVOperation", [] { return std::unique_ptr<Operation>(new AllToAllVOperation()); });

}  // namespace
}  // namespace atb_ops
