// SendOperation and RecvOperation: point to point between two ranks of a communicator.
//   Send: param destRank; inputs x; no output. Blocks until destRank received x.
//   Recv: param srcRank; inputs x (gives the shape and dtype); output a tensor like x, received from srcRank.
// The sizes and dtypes of a matching pair must agree: a mismatch raises on both ranks, no data moves.

#include "core/status.h"
#include "ops/operation_base.h"
#include "ops/operation_registry.h"

namespace atb_ops {
namespace {

// destRank / srcRank: ATB's uint32 fields, which may name neither this rank nor one beyond rankSize.
int32_t readPeer(JsonFields& fields, const char* key, const CommParam& common, const std::string& op) {
  const int64_t peer = fields.int64(key, 1);
  ATB_CHECK(peer >= 0 && peer < common.rankSize && peer != common.rank, ERROR_INVALID_PARAM, op, " param '", key,
            "' is ", peer, "; must be another rank in [0, rankSize=", common.rankSize, "), not rank ", common.rank,
            " itself");
  return static_cast<int32_t>(peer);
}

class SendOperation final : public CommOperation {
 public:
  SendOperation() : CommOperation("SendOperation") {}

  size_t inputNum() const override { return 1; }
  size_t outputNum() const override { return 0; }

  Plan plan(const std::vector<at::Tensor>& inputs) const override {
    checkInputs(inputs, 1);
    return {};
  }

 protected:
  void readParam(JsonFields& fields, const CommParam& common) override {
    dest_ = readPeer(fields, "destRank", common, name());
  }

  void run(const Plan&, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>&) override {
    const at::Tensor x = inputs[0].contiguous();
    communicatorFor(x)->send(x, dest_);
  }

 private:
  int32_t dest_ = 1;
};

class RecvOperation final : public CommOperation {
 public:
  RecvOperation() : CommOperation("RecvOperation") {}

  size_t inputNum() const override { return 1; }
  size_t outputNum() const override { return 1; }

  Plan plan(const std::vector<at::Tensor>& inputs) const override {
    checkInputs(inputs, 1);
    return Plan{{TensorDesc{inputs[0].scalar_type(), inputs[0].sizes().vec()}}};
  }

 protected:
  void readParam(JsonFields& fields, const CommParam& common) override {
    src_ = readPeer(fields, "srcRank", common, name());
  }

  void run(const Plan&, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) override {
    communicatorFor(inputs[0])->recv(outputs[0], src_);
  }

 private:
  int32_t src_ = 1;
};

const bool sendRegistered =
    registerOperation("SendOperation", [] { return std::unique_ptr<Operation>(new SendOperation()); });
const bool recvRegistered =
    registerOperation("RecvOperation", [] { return std::unique_ptr<Operation>(new RecvOperation()); });

}  // namespace
}  // namespace atb_ops
