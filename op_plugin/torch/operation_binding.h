// ATB's torch binding (its test framework's OperationTorch), method for method, as one C++ class that both
// Python doors hold: the TorchScript class torch.classes.OperationTorch.OperationTorch (what ATB's scripts
// construct) and the pybind11 class atb_ops.Operation (the same methods without TorchScript's per-call
// dispatch, ~2 us on a 2-core host). Either way the calls reach the one csrc/ops operator.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/operation_base.h"

namespace atb_ops {

class OperationBinding {
 public:
  explicit OperationBinding(const std::string& name);
  // The operation may hold the last reference to its communicator, and a gloo group's destructor joins
  // threads that may need the GIL to free the tensors of their last work: never hold it here.
  ~OperationBinding();
  OperationBinding(const OperationBinding&) = delete;
  OperationBinding& operator=(const OperationBinding&) = delete;

  // ATB's status string '{"result": 0}'; an invalid param raises.
  std::string setParam(const std::string& json);
  void setVariantPackParam(const std::string& json);
  // JSON: result, num, dtype (aclDataType numbers), format, shape.
  std::string inferShape(const std::vector<at::Tensor>& inputs) const;
  // JSON: result, workspace_size, setup_time (us). Checks the inputs, and the outputs where any are given.
  std::string setup(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) const;
  // The blocking calls release the GIL while they wait on peers.
  std::vector<at::Tensor> execute(const std::vector<at::Tensor>& inputs);
  void executeOut(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs);
  // JSON: result, execute_time, sync_time (us).
  std::string executeSync(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                          int64_t workspaceSize);
  const std::string& name() const { return op_->name(); }

 private:
  std::unique_ptr<Operation> op_;
};

}  // namespace atb_ops
