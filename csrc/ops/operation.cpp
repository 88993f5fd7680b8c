#include "ops/operation.h"

#include <c10/util/Exception.h>

#include "core/dtype.h"
#include "core/env.h"
#include "core/status.h"

namespace atb_ops {

void Operation::setVariantPack(const std::string& json) {
  ATB_FAIL(ERROR_INVALID_PARAM, name(), " takes no variant pack param, got '", json, "'");
}

void CommOperation::setParam(const std::string& json) {
  param_ = parseCommParam(json, name_);
  if (param_.backend == "hccl" && !hasBackend("hccl")) {
    // Decided here, before any tensor is seen, so strict mode fails at set_param like ATB would.
    ATB_CHECK(!strictBackend(), ERROR_INVALID_PARAM, name_,
              " param 'backend' is 'hccl' but this atb_ops has no HCCL backend (no Ascend toolkit at build), and "
              "ATB_OPS_STRICT_BACKEND=1 forbids running on another backend");
  }
  paramSet_ = true;
}

const CommParam& CommOperation::param() const {
  ATB_CHECK(paramSet_, ERROR_INVALID_PARAM, name_, ": set_param must be called before execute");
  return param_;
}

std::shared_ptr<Communicator> CommOperation::communicatorFor(const at::Tensor& x) const {
  const CommParam& p = param();
  CommConfig c;
  c.backend = resolveBackend(p.backend, x.device().type());
  c.rank = p.rank;
  c.rankSize = p.rankSize;
  c.rankRoot = p.rankRoot;
  c.handle = p.hcclComm;
  c.commMode = p.commMode;
  c.rankTableFile = p.rankTableFile;
  c.commDomain = p.commDomain;
  c.deviceIndex = x.device().has_index() ? x.device().index() : -1;
  return getCommunicator(c);
}

void CommOperation::checkInputCount(const std::vector<at::Tensor>& inputs, size_t expected) const {
  ATB_CHECK(inputs.size() == expected, ERROR_INVALID_IN_TENSOR_NUM, name_, " takes ", expected, " input tensors, got ",
            inputs.size());
  ATB_CHECK(inputs[0].defined(), ERROR_INVALID_PARAM, name_, " input 0 (x) is an undefined tensor");
  checkSupportedDtype(inputs[0].scalar_type(), name_ + " input x");
}

void CommOperation::checkOutput(const at::Tensor& out, const Shape& expected, const at::Tensor& x) const {
  ATB_CHECK(out.defined(), ERROR_INVALID_PARAM, name_, " output is an undefined tensor");
  ATB_CHECK(out.sizes() == c10::IntArrayRef(expected), ERROR_INVALID_TENSOR_SIZE, name_, " output has shape ",
            out.sizes(), "; expected ", c10::IntArrayRef(expected));
  ATB_CHECK(out.scalar_type() == x.scalar_type(), ERROR_INVALID_TENSOR_DTYPE, name_, " output has dtype ",
            out.scalar_type(), " but x has ", x.scalar_type());
  ATB_CHECK(out.device() == x.device(), ERROR_INVALID_PARAM, name_, " output is on ", out.device(), " but x is on ",
            x.device());
  ATB_CHECK(out.is_contiguous(), ERROR_INVALID_PARAM, name_, " output must be contiguous (strides ", out.strides(),
            ")");
}

}  // namespace atb_ops
