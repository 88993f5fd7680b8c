// An ATB-style operation: a name, a param set once, shape inference apart from execution.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/params.h"

namespace atb_ops {

using Shape = std::vector<int64_t>;

class Operation {
 public:
  virtual ~Operation() = default;

  virtual const std::string& name() const = 0;

  // Parses and validates the whole param; raises ERROR_INVALID_PARAM naming the field and value.
  virtual void setParam(const std::string& json) = 0;

  // Per-execute data (AllToAllVV2's counts and displacements). Operations without one raise.
  virtual void setVariantPack(const std::string& json);

  // Validates the inputs and returns the output shapes; no communication.
  virtual std::vector<Shape> inferShape(const std::vector<at::Tensor>& inputs) const = 0;

  // Validates, allocates the outputs, runs.
  virtual std::vector<at::Tensor> execute(const std::vector<at::Tensor>& inputs) = 0;

  // Validates inputs and the caller's outputs (shape, dtype, device, contiguity), then writes into them.
  virtual void executeOut(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) = 0;
};

// Raises ERROR_INVALID_PARAM for unknown names, listing the known ones.
std::unique_ptr<Operation> createOperation(const std::string& name);

// Shared by the collective operations: the param, and the communicator that serves a tensor's device.
class CommOperation : public Operation {
 public:
  explicit CommOperation(std::string name) : name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  void setParam(const std::string& json) override;

 protected:
  const CommParam& param() const;
  // The cached communicator for the backend that runs param().backend on this tensor's device.
  std::shared_ptr<Communicator> communicatorFor(const at::Tensor& x) const;
  // Checks an input count and the first input, which every collective has.
  void checkInputCount(const std::vector<at::Tensor>& inputs, size_t expected) const;
  // Checks a caller-provided output against the expected shape, dtype and device of x.
  void checkOutput(const at::Tensor& out, const Shape& expected, const at::Tensor& x) const;

 private:
  std::string name_;
  CommParam param_;
  bool paramSet_ = false;
};

}  // namespace atb_ops
