#include "emulated/atb/api_operation.h"

#include <ATen/ops/empty_like.h>
#include <nlohmann/json.hpp>

#include <acl/acl.h>
#include <algorithm>

#include "core/tensor_checks.h"
#include "emulated/atb/api_error.h"
#include "emulated/atb/context_impl.h"
#include "emulated/atb/dtypes.h"
#include "emulated/atb/log.h"

namespace atb_ops::atb_api {
namespace {

std::string tensorName(const std::string& op, const char* list, size_t i) {
  return op + " " + list + "[" + std::to_string(i) + "]";
}

std::vector<uint64_t> dataSizes(const atb::SVector<atb::Tensor>& tensors) {
  std::vector<uint64_t> sizes;
  for (const atb::Tensor& t : tensors) sizes.push_back(t.dataSize);
  return sizes;
}

// Whether two tensors' bytes intersect. Views made with from_blob have storages of their own even where a program
// passes one buffer twice (an in-place AllReduce), so the storage-based check of the operators cannot see it.
bool bytesOverlap(const at::Tensor& a, const at::Tensor& b) {
  if (a.nbytes() == 0 || b.nbytes() == 0) return false;
  const auto* a0 = static_cast<const char*>(a.data_ptr());
  const auto* b0 = static_cast<const char*>(b.data_ptr());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

// " (rank 1 of 2)" from a param; "" for params without ranks.
std::string rankLabel(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("rank") || !j.contains("rankSize")) return "";
  return " (rank " + j["rank"].dump() + " of " + j["rankSize"].dump() + ")";
}

// "[2, 3] ACL_FLOAT16 (1), ..." for the INFO line of a finished Execute.
std::string describe(const atb::SVector<atb::Tensor>& tensors) {
  std::string text;
  for (const atb::Tensor& t : tensors) {
    const atb::Dims& s = t.desc.shape;
    std::vector<int64_t> dims(s.dims, s.dims + std::min<uint64_t>(s.dimNum, atb::MAX_DIM));
    text += (text.empty() ? "" : ", ") + std::string("[") + c10::Join(", ", dims) + "] " + dtypeName(t.desc.dtype);
  }
  return "[" + text + "]";
}

// The context as a live one of this library; `call` names the method in messages.
ContextState liveContext(const atb::Context* context, const std::string& call) {
  ATB_API_CHECK(context != nullptr, ERROR_INVALID_PARAM, call, ": context is null");
  std::optional<ContextState> state = liveContextState(context);
  ATB_API_CHECK(state.has_value(), ERROR_INVALID_CONTEXT_ADDR, call, ": context ", static_cast<const void*>(context),
                " is not a live context (destroyed by atb::DestroyContext, or not made by atb::CreateContext)");
  return *state;
}

}  // namespace

ApiOperation::ApiOperation(std::string name, nlohmann::json paramObject, std::shared_ptr<atb_ops::Operation> impl,
                           std::any param)
    : name_(std::move(name)),
      io_(operatorIo(name_)),
      paramObject_(std::move(paramObject)),
      rankLabel_(rankLabel(paramObject_)),
      impl_(std::move(impl)),
      param_(std::move(param)) {}

std::string ApiOperation::GetName() const {
  return name_;
}

std::string ApiOperation::callName(const char* method) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return name_ + "::" + method + rankLabel_;
}

std::shared_ptr<atb_ops::Operation> ApiOperation::impl() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return impl_;
}

uint32_t ApiOperation::GetInputNum() const {
  try {
    return static_cast<uint32_t>(impl()->inputNum());
  } catch (...) {
    statusOfCurrentException(callName("GetInputNum").c_str());
    return 0;
  }
}

uint32_t ApiOperation::GetOutputNum() const {
  try {
    return static_cast<uint32_t>(impl()->outputNum());
  } catch (...) {
    statusOfCurrentException(callName("GetOutputNum").c_str());
    return 0;
  }
}

atb::Status ApiOperation::InferShape(const atb::SVector<atb::TensorDesc>& inTensorDescs,
                                     atb::SVector<atb::TensorDesc>& outTensorDescs) const {
  const std::string call = callName("InferShape");
  return guard(call.c_str(), [&] {
    const std::shared_ptr<atb_ops::Operation> op = impl();
    ATB_API_CHECK(inTensorDescs.size() == op->inputNum(), ERROR_INVALID_IN_TENSOR_NUM, call, ": ", name_, " takes ",
                  op->inputNum(), " input descriptions, got ", inTensorDescs.size());
    std::vector<at::Tensor> metas;
    for (size_t i = 0; i < inTensorDescs.size(); ++i) {
      metas.push_back(metaOf(inTensorDescs[i], tensorName(name_, "inTensorDescs", i)));
    }
    atb::SVector<atb::TensorDesc> out;
    if (io_.inferFromDescs) {
      out = io_.inferFromDescs(inTensorDescs);
    } else {
      const aclFormat format = inTensorDescs.empty() ? ACL_FORMAT_ND : inTensorDescs[0].format;
      for (const atb_ops::TensorDesc& d : op->plan(metas).outputs) out.push_back(descOf(d, format));
    }
    outTensorDescs = out;
    return atb::NO_ERROR;
  });
}

ApiOperation::Views ApiOperation::viewsOf(const atb::VariantPack& pack) const {
  Views v;
  for (size_t i = 0; i < pack.inTensors.size(); ++i) {
    v.inputs.push_back(viewOf(pack.inTensors[i], io_.side(i), tensorName(name_, "inTensors", i)));
  }
  for (size_t i = 0; i < pack.outTensors.size(); ++i) {
    v.outputs.push_back(viewOf(pack.outTensors[i], DataSide::kDevice, tensorName(name_, "outTensors", i)));
  }
  return v;
}

atb::Status ApiOperation::Setup(const atb::VariantPack& variantPack, uint64_t& workspaceSize, atb::Context* context) {
  const std::string call = callName("Setup");
  return guard(call.c_str(), [&] {
    workspaceSize = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      setup_.reset();  // a failed Setup leaves nothing for Execute to run with
    }
    liveContext(context, call);
    const std::shared_ptr<atb_ops::Operation> op = impl();
    ATB_API_CHECK(variantPack.inTensors.size() == op->inputNum(), ERROR_INVALID_IN_TENSOR_NUM, call, ": ", name_,
                  " takes ", op->inputNum(), " inTensors, got ", variantPack.inTensors.size());
    ATB_API_CHECK(variantPack.outTensors.size() == op->outputNum(), ERROR_INVALID_IN_TENSOR_NUM, call, ": ", name_,
                  " takes ", op->outputNum(), " outTensors, got ", variantPack.outTensors.size());
    const Views v = viewsOf(variantPack);
    checkAgainstPlan(*op, v);
    std::lock_guard<std::mutex> lock(mutex_);
    setup_ = SetupRecord{context, dataSizes(variantPack.inTensors), dataSizes(variantPack.outTensors)};
    return atb::NO_ERROR;
  });
}

atb::Status ApiOperation::Execute(const atb::VariantPack& variantPack, uint8_t* workspace, uint64_t workspaceSize,
                                  atb::Context* context) {
  (void)workspace;  // Setup asks for 0 bytes: any workspace (or none) will do
  (void)workspaceSize;
  const std::string call = callName("Execute");
  return guard(call.c_str(), [&] {
    const ContextState state = liveContext(context, call);
    std::shared_ptr<atb_ops::Operation> op;
    std::optional<SetupRecord> record;
    uint32_t streamId = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      op = impl_;
      record = setup_;
      streamId = streamId_;
    }
    ATB_API_CHECK(record.has_value(), ERROR_INVALID_PARAM, call, ": no successful Setup before it (call Setup after ",
                  "CreateOperation and after UpdateOperationParam)");
    ATB_API_CHECK(record->context == context, ERROR_INVALID_PARAM, call, ": context ",
                  static_cast<const void*>(context), " is not the context ", static_cast<const void*>(record->context),
                  " Setup was given");
    ATB_API_CHECK(streamId < state.streams.size(), ERROR_INVALID_PARAM, call, ": the operation's execute stream id is ",
                  streamId, " but the context has ", state.streams.size(), " stream(s)");
    const aclrtStream stream = state.streams[streamId];
    ATB_API_CHECK(stream != nullptr, ERROR_INVALID_PARAM, call, ": the context's execute stream ", streamId,
                  " is null (set it with Context::SetExecuteStream)");
    // Work completes when issued, so waiting on the stream only checks that it is still a stream.
    ATB_API_CHECK(aclrtSynchronizeStream(stream) == ACL_SUCCESS, ERROR_INVALID_STREAM, call, ": the execute stream ",
                  stream, " is not a live stream: ", aclGetRecentErrMsg());
    const std::vector<uint64_t> inSizes = dataSizes(variantPack.inTensors);
    const std::vector<uint64_t> outSizes = dataSizes(variantPack.outTensors);
    ATB_API_CHECK(inSizes == record->inSizes && outSizes == record->outSizes, ERROR_INVALID_PARAM, call,
                  ": the tensors' dataSizes (in [", c10::Join(", ", inSizes), "], out [", c10::Join(", ", outSizes),
                  "]) differ from Setup's (in [", c10::Join(", ", record->inSizes), "], out [",
                  c10::Join(", ", record->outSizes), "]); call Setup again for new tensors");
    const Views v = viewsOf(variantPack);
    bool aliased = false;
    for (size_t i = 0; i < v.outputs.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        ATB_API_CHECK(!bytesOverlap(v.outputs[i], v.outputs[j]), ERROR_INVALID_PARAM, call, ": outTensors[", j,
                      "] and outTensors[", i, "] share memory");
      }
      for (const at::Tensor& in : v.inputs) aliased = aliased || bytesOverlap(v.outputs[i], in);
    }
    if (state.executeType == atb::EXECUTE_PRELAUNCH) {
      // ATB's split launch: the first of two Executes only prepares (checks the tensors against the operator); the
      // EXECUTE_LAUNCH one moves the data. Running it here too would apply an in-place collective twice.
      checkAgainstPlan(*op, v);
      return atb::NO_ERROR;
    }
    if (!aliased) {
      op->executeOut(v.inputs, v.outputs);
    } else {
      // An output over an input (in place): the operator writes fresh tensors, copied over the output afterwards, so no
      // rank reads bytes that were already overwritten.
      std::vector<at::Tensor> staged;
      for (const at::Tensor& out : v.outputs) staged.push_back(at::empty_like(out));
      op->executeOut(v.inputs, staged);
      for (size_t i = 0; i < staged.size(); ++i) v.outputs[i].copy_(staged[i]);
    }
    if (logEnabled(atb::LogLevel::INFO)) {
      logLine(atb::LogLevel::INFO, call + " done: inTensors " + describe(variantPack.inTensors) + " -> outTensors " +
                                       describe(variantPack.outTensors));
    }
    return atb::NO_ERROR;
  });
}

std::any ApiOperation::param() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return param_;
}

void ApiOperation::checkAgainstPlan(const atb_ops::Operation& op, const Views& v) const {
  const Plan plan = op.plan(v.inputs);
  for (size_t i = 0; i < v.outputs.size(); ++i) checkOutput(v.outputs[i], plan.outputs.at(i), c10::kCPU, name_, i);
}

void ApiOperation::update(const nlohmann::json& paramObject, std::shared_ptr<atb_ops::Operation> impl, std::any param) {
  std::lock_guard<std::mutex> lock(mutex_);
  param_ = std::move(param);
  if (paramObject == paramObject_) return;
  paramObject_ = paramObject;
  rankLabel_ = rankLabel(paramObject_);
  impl_ = std::move(impl);
  setup_.reset();
}

void ApiOperation::setStreamId(uint32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  streamId_ = id;
}

uint32_t ApiOperation::streamId() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return streamId_;
}

}  // namespace atb_ops::atb_api
