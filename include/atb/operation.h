// atb::Operation and the functions that make, copy the param of, update and destroy one. Written for atb_ops
// from ATB's published interface. CreateOperation<P> exists for the params atb_ops' libatb.so implements.
#ifndef ATB_OPS_INCLUDE_ATB_OPERATION_H
#define ATB_OPS_INCLUDE_ATB_OPERATION_H

#include <cstdint>
#include <functional>
#include <string>

#include "context.h"
#include "svector.h"
#include "types.h"

namespace atb {

// The order of the virtual methods is ATB's (it is the object's vtable).
class Operation {
 public:
  Operation() = default;
  virtual ~Operation() = default;
  virtual std::string GetName() const = 0;
  virtual Status InferShape(const SVector<TensorDesc>& inTensorDescs, SVector<TensorDesc>& outTensorDescs) const = 0;
  virtual uint32_t GetInputNum() const = 0;
  virtual uint32_t GetOutputNum() const = 0;
  // Checks the variant pack and returns the workspace the Execute call needs, in bytes.
  virtual Status Setup(const VariantPack& variantPack, uint64_t& workspaceSize, Context* context) = 0;
  virtual Status Execute(const VariantPack& variantPack, uint8_t* workspace, uint64_t workspaceSize,
                         Context* context) = 0;
};

template <typename OpParam>
Status CreateOperation(const OpParam& opParam, Operation** operation);

Status DestroyOperation(Operation* operation);

template <typename OpParam>
Status CloneOperationParam(const Operation* operation, OpParam& opParam);

template <typename OpParam>
Status UpdateOperationParam(Operation* operation, const OpParam& opParam);

Status SetExecuteStreamId(Operation* operation, uint32_t streamId);
uint32_t GetExecuteStreamId(Operation* operation);

}  // namespace atb

#endif  // ATB_OPS_INCLUDE_ATB_OPERATION_H
