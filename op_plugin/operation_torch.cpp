// torch.classes.OperationTorch.OperationTorch: ATB's torch binding, over csrc/ops.
#include <torch/custom_class.h>
#include <torch/library.h>

#include "op_plugin/gil_release.h"
#include "ops/operation.h"

namespace atb_ops {
namespace {

class OperationTorch : public torch::CustomClassHolder {
 public:
  explicit OperationTorch(std::string name) : op_(createOperation(name)) {}

  std::string setParam(std::string json) {
    op_->setParam(json);
    return R"({"result": 0})";
  }

  void setVariantPackParam(std::string json) { op_->setVariantPack(json); }

  std::vector<std::vector<int64_t>> inferShape(std::vector<at::Tensor> inputs) { return op_->inferShape(inputs); }

  std::vector<at::Tensor> execute(std::vector<at::Tensor> inputs) {
    GilRelease unlocked;
    return op_->execute(inputs);
  }

  void executeOut(std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs) {
    GilRelease unlocked;
    op_->executeOut(inputs, outputs);
  }

  // CPU collectives complete before returning, so the synchronous variant is the same call.
  std::vector<at::Tensor> executeSync(std::vector<at::Tensor> inputs) { return execute(std::move(inputs)); }

  std::string name() const { return op_->name(); }

 private:
  std::unique_ptr<Operation> op_;
};

}  // namespace
}  // namespace atb_ops

TORCH_LIBRARY(OperationTorch, m) {
  using atb_ops::OperationTorch;
  m.class_<OperationTorch>("OperationTorch")
      .def(torch::init<std::string>())
      .def("set_param", &OperationTorch::setParam)
      .def("update_param", &OperationTorch::setParam)
      .def("set_varaintpack_param", &OperationTorch::setVariantPackParam)
      .def("set_variantpack_param", &OperationTorch::setVariantPackParam)
      .def("infer_shape", &OperationTorch::inferShape)
      .def("execute", &OperationTorch::execute)
      .def("execute_out", &OperationTorch::executeOut)
      .def("execute_sync", &OperationTorch::executeSync)
      .def("name", &OperationTorch::name);
}
