// An ATB-style operation: a name, a param set once, and one flow for every operator: plan (validate
// everything, describe the outputs), then allocate or check the outputs, then run that plan. The plan is a
// value handed from one step to the next: an operation holds only its param (and the communicator it made),
// so one operation shared by threads never runs with another call's layout.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/json_fields.h"
#include "core/params.h"
#include "core/tensor_checks.h"

namespace atb_ops {

// What one call was checked to be: the outputs, and what the operator's run needs of its checks (a layout, counts,
// LinearParallel's roles), of the operator's own type: made by its plan() and read only by its run().
struct Plan {
  std::vector<TensorDesc> outputs;
  std::shared_ptr<const void> detail;

  template <typename Detail>
  const Detail& detailAs() const {
    return *static_cast<const Detail*>(detail.get());
  }
};

class Operation {
 public:
  virtual ~Operation() = default;

  virtual const std::string& name() const = 0;

  // Parses and validates the whole param (ATB's creation checks); raises naming the field and value. set_param's
  // text; ATB's C++ API hands the object it builds from ATB's param struct straight to setParamObject.
  void setParam(const std::string& json);
  virtual void setParamObject(const nlohmann::json& param) = 0;
  // Per-execute data (the V operators' counts). Operators without one raise.
  virtual void setVariantPack(const std::string& json);

  // ATB's GetInputNum / GetOutputNum for the current param.
  virtual size_t inputNum() const = 0;
  virtual size_t outputNum() const = 0;

  // Validates the inputs and describes the call; no communication.
  virtual Plan plan(const std::vector<at::Tensor>& inputs) const = 0;
  // ATB's InferShape: the plan's outputs.
  std::vector<TensorDesc> inferShape(const std::vector<at::Tensor>& inputs) const { return plan(inputs).outputs; }

  // Validates, allocates the outputs, runs; returns the outputs (none for Broadcast, which writes its input in
  // place, and Send).
  std::vector<at::Tensor> execute(const std::vector<at::Tensor>& inputs);
  // Validates inputs and the caller's outputs (shape, dtype, device, contiguity), then writes into them. An
  // output that shares bytes with an input is written through a temporary, so the result is never corrupt.
  void executeOut(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs);
  // The caller's outputs against the plan's (ATB's Setup: their count, ERROR_INVALID_IN_TENSOR_NUM as ATB numbers
  // it; each one's shape, dtype, device and contiguity); no communication.
  void checkOutputs(const Plan& plan, const std::vector<at::Tensor>& inputs,
                    const std::vector<at::Tensor>& outputs) const;

 protected:
  // Runs `plan` (made from these very inputs) into outputs of its shapes.
  virtual void run(const Plan& plan, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) = 0;
  // A fresh output (the communicator may place it where peers reach it faster).
  virtual at::Tensor allocate(const TensorDesc& desc, const at::Tensor& firstInput) = 0;
  // Whether `run` may run once more after failing with `error`, before any data moved (the operation then
  // takes a fresh communicator).
  virtual bool mayRetry(const StatusError& error) {
    (void)error;
    return false;
  }

 private:
  void runRetrying(const Plan& plan, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs);
};

// Raises ERROR_INVALID_PARAM for unknown names, listing the known ones.
std::unique_ptr<Operation> createOperation(const std::string& name);

// Shared by the communication operators: the param's common fields, the communicator that serves a tensor's
// device (kept after the first execute), and the input-count and dtype checks.
class CommOperation : public Operation {
 public:
  explicit CommOperation(std::string name) : name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  void setParamObject(const nlohmann::json& param) final;

 protected:
  // Reads this operator's own fields from `fields` after the common ones (`common`, already checked), and
  // runs its own creation checks.
  virtual void readParam(JsonFields& fields, const CommParam& common) = 0;
  // Whether ATB accepts backend "lccl" for this operator (it always accepts "hccl"); the CPU and CUDA
  // backends are accepted everywhere.
  virtual bool acceptsLccl() const { return false; }
  // The default param of this operator (ATB's defaults: rank 0 for most, "lccl" for ReduceScatter).
  virtual CommParam defaults() const;

  const CommParam& param() const;
  // param 'rank' as an index into per-rank arrays of rankSize entries. set_param lets any rank through with an
  // hcclComm or a rankTableFile (as ATB does: the communicator decides), but no communicator has a rank outside
  // [0, rankSize): raises ERROR_INVALID_PARAM naming both, before any communication.
  int64_t rankIndex() const;
  std::shared_ptr<Communicator> communicatorFor(const at::Tensor& x);
  at::Tensor allocate(const TensorDesc& desc, const at::Tensor& firstInput) override;
  // A call finds, before any data moved, that a peer released the communicator (its last operation went: it was
  // dropped earlier or later than this rank's, or a rank re-makes its operation per call, as ATB's tests do):
  // this operation moves to a fresh one, which the peer's new operation is making. ATB keeps communicators in a
  // process-wide pool instead; here they go with their last user, and the ranks meet again.
  bool mayRetry(const StatusError& error) override;
  // Input count, x defined and of a supported dtype.
  void checkInputs(const std::vector<at::Tensor>& inputs, size_t expected) const;
  // Whether the param asks for one of ATB's own backends (hccl, lccl), whose extra checks then apply.
  bool atbBackend() const;
  // A host-side count input (int64, 1-D, `length` entries) of the V operators: the variant pack's values
  // when set_varaintpack_param gave them (as ATB's test framework binds them), which the tensor must then
  // equal; else the tensor's own values.
  std::vector<int64_t> countInput(const at::Tensor& t, const std::string& what, int64_t length,
                                  const std::vector<int64_t>* pack) const;
  // An input's counts equal the variant pack's `what` (when a pack was set: `pack` non-null).
  void checkAgreesWithPack(const std::vector<int64_t>& fromInput, const std::string& what,
                           const std::vector<int64_t>* pack) const;

 private:
  std::string name_;
  CommParam param_;
  nlohmann::json accepted_;  // the param that set param_, read again where a later one is refused
  bool paramSet_ = false;
  std::mutex commMutex_;                // threads sharing this operation ask for its communicator at once
  std::shared_ptr<Communicator> comm_;  // for commDevice_
  c10::Device commDevice_{c10::DeviceType::CPU};
};

}  // namespace atb_ops
