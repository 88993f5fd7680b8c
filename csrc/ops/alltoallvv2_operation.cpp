// AllToAllVV2Operation: ATB's variable all-to-all with per-rank counts and displacements.
//   inputs : x [any shape], sendCounts [rankSize] int64, sdispls [rankSize] int64,
//            recvCounts [rankSize] int64, rdispls [rankSize] int64, tensorForInferShape [sum(recvCounts)]
//            or, after set_varaintpack_param: x, tensorForInferShape
//   output : [1, sum(recvCounts)], dtype and device of x

#include <optional>

#include "core/dtype.h"
#include "core/layout.h"
#include "core/status.h"
#include "ops/operation.h"
#include "ops/operation_registry.h"

namespace atb_ops {
namespace {

constexpr const char* kCountNames[] = {"sendCounts", "sdispls", "recvCounts", "rdispls"};

std::vector<int64_t> hostInt64(const at::Tensor& t, const char* name, int32_t rankSize) {
  ATB_CHECK(t.defined(), ERROR_INVALID_PARAM, "AllToAllVV2Operation input '", name, "' is an undefined tensor");
  ATB_CHECK(t.scalar_type() == at::kLong, ERROR_INVALID_TENSOR_DTYPE, "AllToAllVV2Operation input '", name,
            "' must be int64, got ", t.scalar_type());
  ATB_CHECK(t.dim() == 1 && t.size(0) == rankSize, ERROR_INVALID_TENSOR_DIM, "AllToAllVV2Operation input '", name,
            "' must have shape [rankSize=", rankSize, "], got ", t.sizes());
  // Counts are host data in ATB; a device copy is accepted and brought back.
  const at::Tensor host = t.device().is_cpu() ? t.contiguous() : t.to(at::kCPU).contiguous();
  const int64_t* p = host.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + rankSize);
}

class AllToAllVV2Operation final : public CommOperation {
 public:
  AllToAllVV2Operation() : CommOperation("AllToAllVV2Operation") {}

  void setVariantPack(const std::string& json) override { pack_ = parseLayoutJson(json); }

  std::vector<Shape> inferShape(const std::vector<at::Tensor>& inputs) const override {
    return {Shape{1, prepare(inputs).layout.totalRecv()}};
  }

  std::vector<at::Tensor> execute(const std::vector<at::Tensor>& inputs) override {
    Prepared p = prepare(inputs);
    const auto comm = communicatorFor(p.x);
    at::Tensor out = comm->emptyOutput({1, p.layout.totalRecv()}, p.x.options());
    comm->alltoallv(p.x, p.layout, out);
    return {out};
  }

  void executeOut(const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) override {
    Prepared p = prepare(inputs);
    ATB_CHECK(outputs.size() == 1, ERROR_INVALID_PARAM, name(), " takes 1 output tensor, got ", outputs.size());
    checkOutput(outputs[0], Shape{1, p.layout.totalRecv()}, p.x);
    at::Tensor out = outputs[0];
    run(p, out);
  }

 private:
  struct Prepared {
    at::Tensor x;  // contiguous
    AllToAllVLayout layout;
  };

  // Every check happens here, before any communication.
  Prepared prepare(const std::vector<at::Tensor>& inputs) const {
    const CommParam& prm = param();
    ATB_CHECK(inputs.size() == 6 || (inputs.size() == 2 && pack_.has_value()), ERROR_INVALID_IN_TENSOR_NUM, name(),
              " takes 6 inputs (x, sendCounts, sdispls, recvCounts, rdispls, tensorForInferShape), or 2 (x, "
              "tensorForInferShape) after set_varaintpack_param; got ",
              inputs.size(), pack_ ? "" : " and no variant pack was set");
    checkInputCount(inputs, inputs.size());
    Prepared p;
    if (inputs.size() == 6) {
      std::vector<int64_t>* fields[] = {&p.layout.sendCounts, &p.layout.sdispls, &p.layout.recvCounts,
                                        &p.layout.rdispls};
      for (int i = 0; i < 4; ++i) *fields[i] = hostInt64(inputs[1 + i], kCountNames[i], prm.rankSize);
      if (pack_) checkAgreesWithPack(p.layout);
    } else {
      p.layout = *pack_;
    }
    const at::Tensor& x = inputs[0];
    const int64_t total = validateLayout(p.layout, prm.rankSize, x.numel());
    const at::Tensor& shapeTensor = inputs.back();
    ATB_CHECK(shapeTensor.defined() && shapeTensor.dim() == 1 && shapeTensor.size(0) == total, ERROR_INVALID_TENSOR_DIM,
              name(), " tensorForInferShape must have shape [sum(recvCounts)=", total, "], got ",
              shapeTensor.defined() ? shapeTensor.sizes() : c10::IntArrayRef{});
    p.x = x.contiguous();  // as ATB's torch binding does
    return p;
  }

  void checkAgreesWithPack(const AllToAllVLayout& fromTensors) const {
    const std::vector<int64_t>* a[] = {&fromTensors.sendCounts, &fromTensors.sdispls, &fromTensors.recvCounts,
                                       &fromTensors.rdispls};
    const std::vector<int64_t>* b[] = {&pack_->sendCounts, &pack_->sdispls, &pack_->recvCounts, &pack_->rdispls};
    for (int i = 0; i < 4; ++i) {
      ATB_CHECK(*a[i] == *b[i], ERROR_INVALID_PARAM, name(), " input tensor '", kCountNames[i], "' ",
                c10::IntArrayRef(*a[i]), " disagrees with set_varaintpack_param's ", c10::IntArrayRef(*b[i]));
    }
  }

  void run(const Prepared& p, at::Tensor& out) const { communicatorFor(p.x)->alltoallv(p.x, p.layout, out); }

  std::optional<AllToAllVLayout> pack_;
};

const bool registered =
    registerOperation("AllToAllVV2Operation", [] { return std::unique_ptr<Operation>(new AllToAllVV2Operation()); });

}  // namespace
}  // namespace atb_ops
