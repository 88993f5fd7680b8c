// ATB's functions that make, copy the param of, update and destroy operations, for every param type of
// infer_op_params.h. CreateOperation<P> builds the spec of P (param_specs.h), makes the operator csrc/ops registers
// under that name (or the ELEWISE_CAST operator of elewise_cast.h), sets its param, and wraps it (api_operation.h).
// Live operations are registered, so a destroyed or made-up Operation* is refused with
// ERROR_INVALID_OPERATION_ADDR, never deleted twice.
#include <atb/operation.h>

#include <memory>
#include <mutex>
#include <unordered_map>

#include "emulated/atb/api_error.h"
#include "emulated/atb/api_operation.h"
#include "emulated/atb/elewise_cast.h"
#include "emulated/atb/param_specs.h"

namespace atb_ops::atb_api {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<const atb::Operation*, std::shared_ptr<ApiOperation>> live;
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: programs destroy operations until they exit
  return *r;
}

// The live operation `op` points to; `call` names the function in messages.
std::shared_ptr<ApiOperation> liveOperation(const atb::Operation* op, const char* call) {
  ATB_API_CHECK(op != nullptr, ERROR_INVALID_PARAM, call, ": the operation is null");
  std::lock_guard<std::mutex> lock(registry().mutex);
  const auto it = registry().live.find(op);
  ATB_API_CHECK(it != registry().live.end(), ERROR_INVALID_OPERATION_ADDR, call, ": ", static_cast<const void*>(op),
                " is not a live operation (destroyed by atb::DestroyOperation, or not made by atb::CreateOperation)");
  return it->second;
}

// The operator of `spec` with its param set: csrc/ops' checks run here, so an invalid param fails CreateOperation.
std::shared_ptr<atb_ops::Operation> makeOperator(const OperationSpec& spec) {
  ATB_API_CHECK(spec.notEmulated.empty(), ERROR_INVALID_PARAM, spec.notEmulated);
  std::shared_ptr<atb_ops::Operation> op =
      spec.name == "ElewiseOperation" ? makeElewiseCastOperation() : atb_ops::createOperation(spec.name);
  op->setParamObject(spec.param);
  return op;
}

template <typename Param>
atb::Status create(const Param& param, atb::Operation** operation) {
  return guard("atb::CreateOperation", [&] {
    ATB_API_CHECK(operation != nullptr, ERROR_INVALID_PARAM,
                  "CreateOperation: the Operation** to return it in is null");
    *operation = nullptr;
    const OperationSpec spec = specOf(param);
    auto made = std::make_shared<ApiOperation>(spec.name, spec.param, makeOperator(spec), std::any(param));
    {
      std::lock_guard<std::mutex> lock(registry().mutex);
      registry().live.emplace(made.get(), made);
    }
    *operation = made.get();
    return atb::NO_ERROR;
  });
}

template <typename Param>
atb::Status clone(const atb::Operation* operation, Param& param) {
  return guard("atb::CloneOperationParam", [&] {
    const std::shared_ptr<ApiOperation> op = liveOperation(operation, "CloneOperationParam");
    const std::any held = op->param();
    const Param* stored = std::any_cast<Param>(&held);
    ATB_API_CHECK(stored != nullptr, ERROR_INVALID_PARAM, "CloneOperationParam: ", op->GetName(),
                  " was not made from this param type");
    param = *stored;
    return atb::NO_ERROR;
  });
}

template <typename Param>
atb::Status update(atb::Operation* operation, const Param& param) {
  return guard("atb::UpdateOperationParam", [&] {
    const std::shared_ptr<ApiOperation> op = liveOperation(operation, "UpdateOperationParam");
    const std::any held = op->param();
    ATB_API_CHECK(std::any_cast<Param>(&held) != nullptr, ERROR_INVALID_PARAM, "UpdateOperationParam: ", op->GetName(),
                  " was not made from this param type");
    const OperationSpec spec = specOf(param);
    // A fresh operator takes the new param, so an invalid one leaves the operation as it was.
    op->update(spec.param, makeOperator(spec), std::any(param));
    return atb::NO_ERROR;
  });
}

}  // namespace
}  // namespace atb_ops::atb_api

namespace atb {

// One set of the three templates per param type of infer_op_params.h.
#define ATB_OPS_PARAM_FUNCTIONS(Param)                                                          \
  template <>                                                                                   \
  Status CreateOperation<infer::Param>(const infer::Param& param, Operation** operation) {      \
    return atb_ops::atb_api::create(param, operation);                                          \
  }                                                                                             \
  template <>                                                                                   \
  Status CloneOperationParam<infer::Param>(const Operation* operation, infer::Param& param) {   \
    return atb_ops::atb_api::clone(operation, param);                                           \
  }                                                                                             \
  template <>                                                                                   \
  Status UpdateOperationParam<infer::Param>(Operation * operation, const infer::Param& param) { \
    return atb_ops::atb_api::update(operation, param);                                          \
  }

ATB_OPS_PARAM_FUNCTIONS(AllGatherParam)
ATB_OPS_PARAM_FUNCTIONS(AllGatherVParam)
ATB_OPS_PARAM_FUNCTIONS(AllReduceParam)
ATB_OPS_PARAM_FUNCTIONS(BroadcastParam)
ATB_OPS_PARAM_FUNCTIONS(ReduceScatterParam)
ATB_OPS_PARAM_FUNCTIONS(ReduceScatterVParam)
ATB_OPS_PARAM_FUNCTIONS(LinearParallelParam)
ATB_OPS_PARAM_FUNCTIONS(SendParam)
ATB_OPS_PARAM_FUNCTIONS(RecvParam)
ATB_OPS_PARAM_FUNCTIONS(AllToAllParam)
ATB_OPS_PARAM_FUNCTIONS(AllToAllVParam)
ATB_OPS_PARAM_FUNCTIONS(AllToAllVV2Param)
ATB_OPS_PARAM_FUNCTIONS(ElewiseParam)
ATB_OPS_PARAM_FUNCTIONS(TransdataParam)

#undef ATB_OPS_PARAM_FUNCTIONS

// A null operation is accepted (ATB returns NO_ERROR); one that is not live is reported, not deleted twice.
Status DestroyOperation(Operation* operation) {
  return atb_ops::atb_api::guard("atb::DestroyOperation", [&] {
    if (operation == nullptr) return NO_ERROR;
    std::shared_ptr<atb_ops::atb_api::ApiOperation> gone;  // released after the lock (its communicator with it)
    auto& r = atb_ops::atb_api::registry();
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      const auto it = r.live.find(operation);
      ATB_API_CHECK(it != r.live.end(), ERROR_INVALID_OPERATION_ADDR,
                    "DestroyOperation: ", static_cast<void*>(operation),
                    " is not a live operation (destroyed already, or not made by atb::CreateOperation)");
      gone = std::move(it->second);
      r.live.erase(it);
    }
    return NO_ERROR;
  });
}

// Which of the context's execute streams (Context::SetExecuteStreams) the operation runs on.
Status SetExecuteStreamId(Operation* operation, uint32_t streamId) {
  return atb_ops::atb_api::guard("atb::SetExecuteStreamId", [&] {
    atb_ops::atb_api::liveOperation(operation, "SetExecuteStreamId")->setStreamId(streamId);
    return NO_ERROR;
  });
}

uint32_t GetExecuteStreamId(Operation* operation) {
  uint32_t id = 0;
  atb_ops::atb_api::guard("atb::GetExecuteStreamId", [&] {
    id = atb_ops::atb_api::liveOperation(operation, "GetExecuteStreamId")->streamId();
    return NO_ERROR;
  });
  return id;
}

}  // namespace atb
