#include "emulated/atb/elewise_cast.h"

#include <ATen/ops/empty.h>

#include <mutex>
#include <optional>

#include "core/dtype.h"
#include "core/json_fields.h"
#include "core/status.h"
#include "emulated/atb/dtypes.h"

namespace atb_ops::atb_api {
namespace {

constexpr int kElewiseCast = 1;  // atb::infer::ElewiseParam::ELEWISE_CAST

class ElewiseCastOperation final : public atb_ops::Operation {
 public:
  const std::string& name() const override { return name_; }

  void setParamObject(const nlohmann::json& param) override {
    JsonFields fields(param, name_ + " param");
    const int32_t type = fields.int32("elewiseType", 0);
    const int32_t out = fields.int32("outTensorType", -1);
    fields.checkUnknownKeys();
    ATB_CHECK(type == kElewiseCast, ERROR_INVALID_PARAM, name_, " param 'elewiseType' is ", type,
              "; only ELEWISE_CAST (1) is emulated");
    const std::optional<c10::ScalarType> dtype = scalarTypeOf(static_cast<aclDataType>(out));
    ATB_CHECK(dtype.has_value(), ERROR_INVALID_PARAM, name_, " ELEWISE_CAST param 'outTensorType' is ",
              dtypeName(static_cast<aclDataType>(out)), "; expected one of the dtypes atb_ops moves");
    std::lock_guard<std::mutex> lock(mutex_);
    outType_ = dtype;
  }

  size_t inputNum() const override { return 1; }
  size_t outputNum() const override { return 1; }

  Plan plan(const std::vector<at::Tensor>& inputs) const override {
    ATB_CHECK(inputs.size() == 1, ERROR_INVALID_IN_TENSOR_NUM, name_, " takes 1 input tensor, got ", inputs.size());
    ATB_CHECK(inputs[0].defined(), ERROR_INVALID_PARAM, name_, " input 0 (x) is an undefined tensor");
    checkSupportedDtype(inputs[0].scalar_type(), name_ + " input x");
    Plan p;
    p.outputs = {TensorDesc{outType(), inputs[0].sizes().vec()}};
    return p;
  }

 protected:
  void run(const Plan&, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) override {
    outputs[0].copy_(inputs[0]);  // a converting copy: torch's rounding (to nearest even for 16-bit floats)
  }

  at::Tensor allocate(const TensorDesc& desc, const at::Tensor& firstInput) override {
    return at::empty(desc.shape, firstInput.options().dtype(desc.dtype));
  }

 private:
  c10::ScalarType outType() const {
    std::lock_guard<std::mutex> lock(mutex_);
    ATB_CHECK(outType_.has_value(), ERROR_INVALID_PARAM, name_, ": set_param must be called before execute");
    return *outType_;
  }

  const std::string name_ = "ElewiseOperation";
  mutable std::mutex mutex_;
  std::optional<c10::ScalarType> outType_;
};

}  // namespace

std::unique_ptr<atb_ops::Operation> makeElewiseCastOperation() {
  return std::make_unique<ElewiseCastOperation>();
}

}  // namespace atb_ops::atb_api
