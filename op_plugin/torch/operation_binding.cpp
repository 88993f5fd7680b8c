#include "op_plugin/torch/operation_binding.h"

#include <chrono>
#include <sstream>

#include "core/acl_codes.h"
#include "op_plugin/torch/gil_release.h"

namespace atb_ops {
namespace {

using Clock = std::chrono::steady_clock;

// Whole microseconds, as ATB's timers report them (uint64).
int64_t microseconds(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

}  // namespace

OperationBinding::OperationBinding(const std::string& name) : op_(createOperation(name)) {}

OperationBinding::~OperationBinding() {
  GilRelease unlocked;
  op_.reset();
}

std::string OperationBinding::setParam(const std::string& json) {
  op_->setParam(json);
  return R"({"result": 0})";
}

void OperationBinding::setVariantPackParam(const std::string& json) {
  op_->setVariantPack(json);
}

std::string OperationBinding::inferShape(const std::vector<at::Tensor>& inputs) const {
  const std::vector<TensorDesc> descs = op_->inferShape(inputs);
  std::ostringstream dtypes, formats, shapes;
  for (size_t i = 0; i < descs.size(); ++i) {
    const char* sep = i == 0 ? "" : ", ";
    dtypes << sep << acl::dataTypeOf(descs[i].dtype);  // aclDataType numbers, as ATB's infer_shape reports them
    formats << sep << acl::kFormatNd;
    shapes << sep << '[';
    for (size_t d = 0; d < descs[i].shape.size(); ++d) shapes << (d ? ", " : "") << descs[i].shape[d];
    shapes << ']';
  }
  std::ostringstream out;
  out << R"({"result": 0, "num": )" << descs.size() << R"(, "dtype": [)" << dtypes.str() << R"(], "format": [)"
      << formats.str() << R"(], "shape": [)" << shapes.str() << "]}";
  return out.str();
}

std::string OperationBinding::setup(const std::vector<at::Tensor>& inputs,
                                    const std::vector<at::Tensor>& outputs) const {
  const auto start = Clock::now();
  const Plan plan = op_->plan(inputs);
  // As ATB's Setup checks the variant pack's outputs; a script that gives none (it lets execute allocate them)
  // is not refused for it.
  if (!outputs.empty()) op_->checkOutputs(plan, inputs, outputs);
  std::ostringstream out;
  out << R"({"result": 0, "workspace_size": 0, "setup_time": )" << microseconds(Clock::now() - start) << "}";
  return out.str();
}

std::vector<at::Tensor> OperationBinding::execute(const std::vector<at::Tensor>& inputs) {
  return blockingCall([&] { return op_->execute(inputs); });
}

void OperationBinding::executeOut(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) {
  blockingCall([&] { op_->executeOut(inputs, outputs); });
}

// CPU collectives complete inside the call; device backends are synchronized on the host here.
std::string OperationBinding::executeSync(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                                          int64_t /*workspaceSize*/) {
  const auto start = Clock::now();
  blockingCall([&] { op_->executeOut(inputs, outputs); });
  const auto executed = Clock::now();
  std::ostringstream out;
  out << R"({"result": 0, "execute_time": )" << microseconds(executed - start) << R"(, "sync_time": )"
      << microseconds(Clock::now() - executed) << "}";
  return out.str();
}

}  // namespace atb_ops
