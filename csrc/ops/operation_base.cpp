#include "ops/operation_base.h"

#include <ATen/ops/empty.h>

#include "comm/comm_cache.h"
#include "core/dtype.h"
#include "core/json_fields.h"
#include "core/status.h"

namespace atb_ops {
namespace {

// ATB's LCCL multi-process communicators are numbered: commDomain is "", "<id>" or "<id>:<size>",
// id in [0, 65535], size > 0.
void checkLcclCommDomain(const std::string& d) {
  if (d.empty()) return;
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  const size_t colon = d.find(':');
  const std::string id = d.substr(0, colon);
  const std::string size = colon == std::string::npos ? "1" : d.substr(colon + 1);
  ATB_CHECK(digits(id) && digits(size) && std::stol(id) <= 65535 && std::stol(size) > 0, ERROR_INVALID_PARAM,
            "backend 'lccl' (multi-process) needs commDomain \"<id>\" or \"<id>:<size>\" with id in [0, 65535] and "
            "size > 0, got '",
            d, "'");
}

}  // namespace

void Operation::setVariantPack(const std::string& json) {
  ATB_FAIL(ERROR_INVALID_PARAM, name(), " takes no variant pack param, got '", excerpt(json), "'");
}

std::vector<at::Tensor> Operation::execute(const std::vector<at::Tensor>& inputs) {
  const CallLabel label(name());
  const Plan p = plan(inputs);
  std::vector<at::Tensor> outputs;
  outputs.reserve(p.outputs.size());
  for (const TensorDesc& d : p.outputs) outputs.push_back(allocate(d, inputs.at(0)));
  runRetrying(p, inputs, outputs);
  return outputs;
}

void Operation::runRetrying(const Plan& p, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) {
  // A peer may release a communicator more than once in a row (a rank that re-makes its operations call after
  // call): follow it a few times, then give up with its error.
  constexpr int kMaxMoves = 16;
  for (int move = 0;; ++move) {
    try {
      run(p, inputs, outputs);
      return;
    } catch (const StatusError& e) {
      if (move == kMaxMoves || !mayRetry(e)) throw;
    }
  }
}

void Operation::checkOutputs(const Plan& p, const std::vector<at::Tensor>& inputs,
                             const std::vector<at::Tensor>& outputs) const {
  ATB_CHECK(outputs.size() == p.outputs.size(), ERROR_INVALID_IN_TENSOR_NUM, name(), " takes ", p.outputs.size(),
            " output tensor(s), got ", outputs.size());
  const c10::Device device = inputs.at(0).device();
  for (size_t i = 0; i < outputs.size(); ++i) checkOutput(outputs[i], p.outputs[i], device, name(), i);
}

void Operation::executeOut(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) {
  const CallLabel label(name());
  const Plan p = plan(inputs);
  const std::vector<TensorDesc>& descs = p.outputs;
  checkOutputs(p, inputs, outputs);
  bool aliased = false;
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (const at::Tensor& in : inputs) aliased = aliased || mayOverlap(outputs[i], in);
    for (size_t j = 0; j < i; ++j) {
      ATB_CHECK(!mayOverlap(outputs[i], outputs[j]), ERROR_INVALID_PARAM, name(), " outputs ", j, " and ", i,
                " share memory");
    }
  }
  if (!aliased) {
    std::vector<at::Tensor> targets(outputs);
    runRetrying(p, inputs, targets);
    return;
  }
  // An output over an input: compute into fresh tensors, then copy, so no rank reads what was overwritten.
  std::vector<at::Tensor> staged;
  for (const TensorDesc& d : descs) staged.push_back(at::empty(d.shape, inputs[0].options().dtype(d.dtype)));
  runRetrying(p, inputs, staged);
  for (size_t i = 0; i < outputs.size(); ++i) const_cast<at::Tensor&>(outputs[i]).copy_(staged[i]);
}

void Operation::setParam(const std::string& json) {
  setParamObject(parseJsonObject(json, name() + " param"));
}

void CommOperation::setParamObject(const nlohmann::json& param) {
  JsonFields fields(param, name_ + " param");
  CommParam p = readCommParam(fields, defaults());
  // As ATB's set_param keeps the operation it had when a new param fails: readParam may have taken some of the
  // refused param's fields, so the accepted param's are read again (they passed these very checks before).
  const auto keepAccepted = [&] {
    if (!paramSet_) return;
    try {
      JsonFields again(accepted_, name_ + " param");
      readParam(again, param_);
    } catch (const StatusError&) {
      paramSet_ = false;  // the environment changed under it (ATB_OPS_NPU_NAME): no half-restored operation runs
    }
  };
  try {
    if (!isKnownBackend(p.backend) || (p.backend == "lccl" && !acceptsLccl())) {
      std::vector<std::string> accepted;
      for (const std::string& b : backendNames()) {
        if (b != "lccl" || acceptsLccl()) accepted.push_back(b);
      }
      ATB_FAIL(ERROR_INVALID_PARAM, name_, " param 'backend' is '", p.backend, "'; ", name_, " accepts ",
               listOfNames(accepted));
    }
    // ATB's rsv[] must stay zero; its JSON parser accepts the key.
    for (int64_t v : fields.int64Array("rsv", {})) {
      ATB_CHECK(v == 0, ERROR_INVALID_PARAM, name_, " param 'rsv' must be all zeros, got ", v);
    }
    validateCommParam(p, name_);
    if (p.backend == "lccl" && p.commMode == CommMode::MULTI_PROCESS) checkLcclCommDomain(p.commDomain);
    readParam(fields, p);
  } catch (const StatusError& e) {
    keepAccepted();
    // {"rnak": 0}: "'rank' is -1" alone would hide the cause.
    const std::string typos = fields.likelyTypos();
    if (typos.empty()) throw;
    throw StatusError(e.status(), __func__, __FILE__, static_cast<uint32_t>(__LINE__),
                      e.msg() + "; the param has unknown key(s) " + typos);
  }
  try {
    fields.checkUnknownKeys();
    checkBackendAvailable(p.backend, readOptions(), name_);
  } catch (const StatusError&) {
    keepAccepted();
    throw;
  }
  param_ = p;
  accepted_ = param;
  {
    std::lock_guard<std::mutex> lock(commMutex_);
    comm_.reset();  // a new param may name another communicator
  }
  paramSet_ = true;
}

CommParam CommOperation::defaults() const {
  CommParam p;
  p.rank = 0;
  return p;
}

bool CommOperation::atbBackend() const {
  return param().backend == "hccl" || param().backend == "lccl";
}

const CommParam& CommOperation::param() const {
  ATB_CHECK(paramSet_, ERROR_INVALID_PARAM, name_, ": set_param must be called before execute or infer_shape");
  return param_;
}

int64_t CommOperation::rankIndex() const {
  const CommParam& p = param();
  ATB_CHECK(p.rank >= 0 && p.rank < p.rankSize, ERROR_INVALID_PARAM, name_, " param 'rank' is ", p.rank,
            "; must be in [0, rankSize=", p.rankSize, ")",
            p.hcclComm != 0 ? " (hcclComm's rank)" : (!p.rankTableFile.empty() ? " (a rank of rankTableFile)" : ""));
  return p.rank;
}

std::shared_ptr<Communicator> CommOperation::communicatorFor(const at::Tensor& x) {
  const CommParam& p = param();
  std::lock_guard<std::mutex> lock(commMutex_);
  if (comm_ && commDevice_ == x.device()) return comm_;
  comm_ = acquireCommunicator(configFromParam(p, x.device()));
  commDevice_ = x.device();
  return comm_;
}

bool CommOperation::mayRetry(const StatusError& error) {
  if (error.status() != Status::ERROR_COMM_PEER_LEFT) return false;
  std::lock_guard<std::mutex> lock(commMutex_);
  comm_.reset();  // failed, so the cache makes a fresh one
  return true;
}

at::Tensor CommOperation::allocate(const TensorDesc& desc, const at::Tensor& firstInput) {
  return communicatorFor(firstInput)->emptyOutput(desc.shape, firstInput.options().dtype(desc.dtype));
}

std::vector<int64_t> CommOperation::countInput(const at::Tensor& t, const std::string& what, int64_t length,
                                               const std::vector<int64_t>* pack) const {
  ATB_CHECK(t.defined() && t.dim() == 1, ERROR_INVALID_TENSOR_DIM_NUM, name_, " input '", what,
            "' must be 1-D, got shape ", t.defined() ? t.sizes() : c10::IntArrayRef{});
  std::vector<int64_t> values = hostInt64(t, name_, what.c_str(), length, length == 1 ? "" : "rankSize");
  checkAgreesWithPack(values, what, pack);
  return values;
}

void CommOperation::checkAgreesWithPack(const std::vector<int64_t>& fromInput, const std::string& what,
                                        const std::vector<int64_t>* pack) const {
  ATB_CHECK(pack == nullptr || fromInput == *pack, ERROR_INVALID_PARAM, name_, " input '", what, "' ",
            c10::IntArrayRef(fromInput), " disagrees with set_varaintpack_param's ",
            c10::IntArrayRef(pack == nullptr ? fromInput : *pack));
}

void CommOperation::checkInputs(const std::vector<at::Tensor>& inputs, size_t expected) const {
  ATB_CHECK(inputs.size() == expected, ERROR_INVALID_IN_TENSOR_NUM, name_, " takes ", expected, " input tensors, got ",
            inputs.size());
  ATB_CHECK(inputs[0].defined(), ERROR_INVALID_PARAM, name_, " input 0 (x) is an undefined tensor");
  checkSupportedDtype(inputs[0].scalar_type(), name_ + " input x");
}

}  // namespace atb_ops
