// torch.classes.OperationTorch.OperationTorch: ATB's torch binding (its test framework's class) as a
// TorchScript class over OperationBinding. Where ATB only logs a failure and returns an error code, this
// raises RuntimeError whose message starts with ATB's error name.
#include <torch/custom_class.h>
#include <torch/library.h>

#include "op_plugin/torch/operation_binding.h"

namespace atb_ops {
namespace {

class OperationTorch : public torch::CustomClassHolder {
 public:
  explicit OperationTorch(const std::string& name) : b_(name) {}

  std::string setParam(std::string json) { return b_.setParam(json); }
  void setVariantPackParam(std::string json) { b_.setVariantPackParam(json); }
  std::string inferShape(std::vector<at::Tensor> inputs) { return b_.inferShape(inputs); }
  std::string setup(std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs) {
    return b_.setup(inputs, outputs);
  }
  std::vector<at::Tensor> execute(std::vector<at::Tensor> inputs) { return b_.execute(inputs); }
  void executeOut(std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs) { b_.executeOut(inputs, outputs); }
  std::string executeSync(std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs, int64_t workspaceSize) {
    return b_.executeSync(inputs, outputs, workspaceSize);
  }
  // ATB binds tensor lists to operators that take them; no communication operator does, so there is
  // nothing to bind (ATB's scripts call it anyway).
  void setTensorList(std::vector<at::Tensor> /*tensors*/, std::string /*name*/) {}
  std::vector<at::Tensor> executeSplitThread(std::vector<at::Tensor> inputs) { return b_.execute(inputs); }
  std::string name() const { return b_.name(); }

 private:
  OperationBinding b_;
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
      .def("setup", &OperationTorch::setup)
      .def("execute", &OperationTorch::execute)
      .def("execute_out", &OperationTorch::executeOut)
      .def("execute_sync", &OperationTorch::executeSync)
      .def("set_tensor_list", &OperationTorch::setTensorList)
      .def("execute_split_thread", &OperationTorch::executeSplitThread)
      .def("name", &OperationTorch::name);
}
