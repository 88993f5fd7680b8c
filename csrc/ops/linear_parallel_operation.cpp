#include "ops/linear_parallel_operation.h"

#include <ATen/ops/empty.h>

#include "comm/comm_cache.h"
#include "comm/comm_config.h"
#include "core/status.h"
#include "ops/linear_parallel_plan.h"
#include "ops/linear_parallel_run.h"
#include "ops/operation_registry.h"

namespace atb_ops {
namespace {

// Holds its param and nothing else: every call plans from (param, inputs) and runs that plan, and the
// communicator comes from the cache per call, so threads sharing one operation never mix two calls.
class LinearParallelOperation final : public Operation {
 public:
  LinearParallelOperation() = default;
  explicit LinearParallelOperation(const LinearParallelParam& p) : param_(p), paramSet_(true) {}

  const std::string& name() const override {
    static const std::string kName = kLinearParallelName;
    return kName;
  }

  void setParamObject(const nlohmann::json& param) override {
    param_ = readLinearParallelParam(param);
    paramSet_ = true;
  }

  size_t inputNum() const override { return param().inputNum(); }
  size_t outputNum() const override { return param().outputNum(); }

  // The plan's detail is LinearParallelPlan (roles, sizes, dequantisation, layouts), which run() follows.
  Plan plan(const std::vector<at::Tensor>& inputs) const override {
    auto planned = std::make_shared<const LinearParallelPlan>(planLinearParallel(param(), inputs));
    std::vector<TensorDesc> outputs = planned->outputs;
    return Plan{std::move(outputs), std::move(planned)};
  }

 protected:
  void run(const Plan& planned, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) override {
    const std::shared_ptr<Communicator> comm = communicator(inputs.at(0));
    runLinearParallel(param(), planned.detailAs<LinearParallelPlan>(), inputs, outputs, comm.get());
  }

  at::Tensor allocate(const TensorDesc& desc, const at::Tensor& firstInput) override {
    const std::shared_ptr<Communicator> comm = communicator(firstInput);
    const at::TensorOptions options = firstInput.options().dtype(desc.dtype);
    return comm ? comm->emptyOutput(desc.shape, options) : at::empty(desc.shape, options);
  }

 private:
  const LinearParallelParam& param() const {
    ATB_CHECK(paramSet_, ERROR_INVALID_PARAM, kLinearParallelName,
              ": set_param must be called before execute or infer_shape");
    return param_;
  }

  // The cached communicator of the param for x's device; none for PURE_LINEAR.
  std::shared_ptr<Communicator> communicator(const at::Tensor& x) const {
    if (!linearParallelCommunicates(param())) return nullptr;
    return acquireCommunicator(configFromParam(communicatorParam(param()), x.device()));
  }

  LinearParallelParam param_;
  bool paramSet_ = false;
};

const bool registered =
    registerOperation(kLinearParallelName, [] { return std::unique_ptr<Operation>(new LinearParallelOperation()); });

}  // namespace

std::unique_ptr<Operation> makeLinearParallelOperation(const LinearParallelParam& param) {
  validateLinearParallelParam(param);
  return std::unique_ptr<Operation>(new LinearParallelOperation(param));
}

}  // namespace atb_ops
