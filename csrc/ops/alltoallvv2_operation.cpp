// AllToAllVV2Operation: ATB's variable all-to-all with per-rank counts and displacements.
//   inputs : x [any shape], sendCounts [rankSize] int64, sdispls [rankSize] int64,
//            recvCounts [rankSize] int64, rdispls [rankSize] int64, tensorForInferShape [sum(recvCounts)]
//            or, after set_varaintpack_param: x, tensorForInferShape
//   output : [1, sum(recvCounts)], dtype and device of x
// Counts and displacements are in elements of x flattened. Difference from ATB: sum(recvCounts) == 0 is
// allowed (a MoE rank that receives nothing is normal).

#include <memory>

#include "core/layout.h"
#include "core/status.h"
#include "ops/operation_base.h"
#include "ops/operation_registry.h"
#include "ops/variant_pack.h"

namespace atb_ops {
namespace {

constexpr const char* kCountNames[] = {"sendCounts", "sdispls", "recvCounts", "rdispls"};

class AllToAllVV2Operation final : public CommOperation {
 public:
  AllToAllVV2Operation() : CommOperation("AllToAllVV2Operation") {}

  void setVariantPack(const std::string& json) override { pack_.set(parseLayoutJson(json)); }
  size_t inputNum() const override { return 6; }
  size_t outputNum() const override { return 1; }

  Plan plan(const std::vector<at::Tensor>& inputs) const override {
    std::shared_ptr<const AllToAllVLayout> layout = layoutOf(inputs);
    const int64_t total = layout->totalRecv();
    return Plan{{TensorDesc{inputs[0].scalar_type(), Shape{1, total}}}, std::move(layout)};
  }

 protected:
  void readParam(JsonFields&, const CommParam&) override {}
  CommParam defaults() const override { return CommParam{}; }  // rank -1, as ATB's AllToAllVV2Param

  void run(const Plan& planned, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) override {
    const at::Tensor x = inputs[0].contiguous();  // as ATB's torch binding does
    communicatorFor(x)->alltoallv(x, planned.detailAs<AllToAllVLayout>(), outputs[0]);
  }

 private:
  // Every check happens here, before any communication.
  std::shared_ptr<const AllToAllVLayout> layoutOf(const std::vector<at::Tensor>& inputs) const {
    const CommParam& prm = param();
    const std::shared_ptr<const AllToAllVLayout> pack = pack_.get();
    ATB_CHECK(inputs.size() == 6 || (inputs.size() == 2 && pack != nullptr), ERROR_INVALID_IN_TENSOR_NUM, name(),
              " takes 6 inputs (x, sendCounts, sdispls, recvCounts, rdispls, tensorForInferShape), or 2 (x, "
              "tensorForInferShape) after set_varaintpack_param; got ",
              inputs.size(), pack ? "" : " and no variant pack was set");
    checkInputs(inputs, inputs.size());
    std::shared_ptr<const AllToAllVLayout> layout = pack;
    if (inputs.size() == 6) {
      AllToAllVLayout read;
      std::vector<int64_t>* fields[] = {&read.sendCounts, &read.sdispls, &read.recvCounts, &read.rdispls};
      for (int i = 0; i < 4; ++i) {
        *fields[i] = hostInt64(inputs[1 + i], name(), kCountNames[i], prm.rankSize, "rankSize");
      }
      if (pack) {
        const std::vector<int64_t>* packed[] = {&pack->sendCounts, &pack->sdispls, &pack->recvCounts, &pack->rdispls};
        for (int i = 0; i < 4; ++i) checkAgreesWithPack(*fields[i], kCountNames[i], packed[i]);
      }
      layout = std::make_shared<const AllToAllVLayout>(std::move(read));
    }
    const int64_t total = validateLayout(*layout, prm.rankSize, inputs[0].numel());
    const at::Tensor& shapeTensor = inputs.back();
    ATB_CHECK(shapeTensor.defined() && shapeTensor.dim() == 1 && shapeTensor.size(0) == total, ERROR_INVALID_TENSOR_DIM,
              name(), " tensorForInferShape must have shape [sum(recvCounts)=", total, "], got ",
              shapeTensor.defined() ? shapeTensor.sizes() : c10::IntArrayRef{});
    return layout;
  }

  VariantPackSlot<AllToAllVLayout> pack_;
};

const bool registered =
    registerOperation("AllToAllVV2Operation", [] { return std::unique_ptr<Operation>(new AllToAllVV2Operation()); });

}  // namespace
}  // namespace atb_ops
