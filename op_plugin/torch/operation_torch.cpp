// torch.classes.OperationTorch.OperationTorch: ATB's torch binding (its test framework's class), method for
// method, over csrc/ops. Where ATB only logs a failure and returns an error code, this raises RuntimeError
// whose message starts with ATB's error name.
#include <torch/custom_class.h>
#include <torch/library.h>

#include <chrono>
#include <sstream>

#include "op_plugin/torch/gil_release.h"
#include "ops/operation.h"

namespace atb_ops {
namespace {

using Clock = std::chrono::steady_clock;

double microseconds(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// aclDataType numbers, as ATB's infer_shape reports dtypes.
int aclDataType(c10::ScalarType t) {
  switch (t) {
    case at::kFloat: return 0;
    case at::kHalf: return 1;
    case at::kChar: return 2;
    case at::kInt: return 3;
    case at::kByte: return 4;
    case at::kShort: return 6;
    case at::kLong: return 9;
    case at::kDouble: return 11;
    case at::kBool: return 12;
    case at::kBFloat16: return 27;
    default: return -1;
  }
}

constexpr int kAclFormatNd = 2;

class OperationTorch : public torch::CustomClassHolder {
 public:
  explicit OperationTorch(std::string name) : op_(createOperation(name)) {}
  // The operation may hold the last reference to its communicator, and a gloo group's destructor joins
  // threads that may need the GIL to free the tensors of their last work: never hold it here.
  ~OperationTorch() override {
    GilRelease unlocked;
    op_.reset();
  }

  std::string setParam(std::string json) {
    op_->setParam(json);
    return R"({"result": 0})";
  }

  void setVariantPackParam(std::string json) { op_->setVariantPack(json); }

  std::string inferShape(std::vector<at::Tensor> inputs) {
    const std::vector<TensorDesc> descs = op_->inferShape(inputs);
    std::ostringstream dtypes, formats, shapes;
    for (size_t i = 0; i < descs.size(); ++i) {
      const char* sep = i == 0 ? "" : ", ";
      dtypes << sep << aclDataType(descs[i].dtype);
      formats << sep << kAclFormatNd;
      shapes << sep << '[';
      for (size_t d = 0; d < descs[i].shape.size(); ++d) shapes << (d ? ", " : "") << descs[i].shape[d];
      shapes << ']';
    }
    std::ostringstream out;
    out << R"({"result": 0, "num": )" << descs.size() << R"(, "dtype": [)" << dtypes.str() << R"(], "format": [)"
        << formats.str() << R"(], "shape": [)" << shapes.str() << "]}";
    return out.str();
  }

  std::string setup(std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs) {
    const auto start = Clock::now();
    const std::vector<TensorDesc> descs = op_->inferShape(inputs);
    (void)descs;
    (void)outputs;
    std::ostringstream out;
    out << R"({"result": 0, "workspace_size": 0, "setup_time": )" << microseconds(Clock::now() - start) << "}";
    return out.str();
  }

  std::vector<at::Tensor> execute(std::vector<at::Tensor> inputs) {
    return blockingCall([&] { return op_->execute(inputs); });
  }

  void executeOut(std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs) {
    blockingCall([&] { op_->executeOut(inputs, outputs); });
  }

  // CPU collectives complete inside the call; device backends are synchronized on the host here.
  std::string executeSync(std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs, int64_t workspaceSize) {
    (void)workspaceSize;
    const auto start = Clock::now();
    blockingCall([&] { op_->executeOut(inputs, outputs); });
    const auto executed = Clock::now();
    std::ostringstream out;
    out << R"({"result": 0, "execute_time": )" << microseconds(executed - start) << R"(, "sync_time": )"
        << microseconds(Clock::now() - executed) << "}";
    return out.str();
  }

  // ATB binds tensor lists to operators that take them; no communication operator does, so there is
  // nothing to bind (ATB's scripts call it anyway).
  void setTensorList(std::vector<at::Tensor> /*tensors*/, std::string /*name*/) {}

  std::vector<at::Tensor> executeSplitThread(std::vector<at::Tensor> inputs) { return execute(std::move(inputs)); }

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
      .def("setup", &OperationTorch::setup)
      .def("execute", &OperationTorch::execute)
      .def("execute_out", &OperationTorch::executeOut)
      .def("execute_sync", &OperationTorch::executeSync)
      .def("set_tensor_list", &OperationTorch::setTensorList)
      .def("execute_split_thread", &OperationTorch::executeSplitThread)
      .def("name", &OperationTorch::name);
}
