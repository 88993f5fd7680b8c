#include "op_plugin/torch/c10d_backend.h"

#include <ATen/core/ivalue.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>  // configForGroup takes a (null) group

#include <algorithm>
#include <mutex>
#include <utility>

#include "comm/bootstrap/store_bootstrap.h"
#include "comm/call_signature.h"
#include "comm/comm_cache.h"
#include "core/status.h"
#include "framework/torch_forms.h"
#include "op_plugin/torch/gil_release.h"

namespace atb_ops {
namespace {

c10::intrusive_ptr<c10::ivalue::Future> tensorFuture() {
  return c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors());
}

// A Work that is done when it is returned (every collective here completes before it returns): wait() returns at
// once. The future DDP's reducer chains its gradient averaging on is made only when asked for: a completed future
// per call (its IValue list, its storage scan, a Work wrapping it) cost ~0.3 us of the ~1.3 us this backend added
// to torch's own call (1 KiB all_reduce, 2 ranks pinned, medians of 3 runs: +1.30 -> +0.97 us over FakeProcessGroup).
class DoneWork : public c10d::Work {
 public:
  explicit DoneWork(std::vector<at::Tensor> outputs) : outputs_(std::move(outputs)) { finish(); }

  std::vector<at::Tensor> result() override { return outputs_; }

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    std::call_once(made_, [this] {
      future_ = tensorFuture();
      future_->markCompleted(c10::IValue(outputs_));
    });
    return future_;
  }

 private:
  std::vector<at::Tensor> outputs_;
  std::once_flag made_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

c10::intrusive_ptr<c10d::Work> doneWork(std::vector<at::Tensor> outputs) {
  return c10::make_intrusive<DoneWork>(std::move(outputs));
}

// torch's reduce op as the framework body's name; AVG is a sum divided afterwards (reduceAverage).
std::string reduceName(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::AVG: return "sum";
    case c10d::ReduceOp::PRODUCT: return "prod";
    case c10d::ReduceOp::MIN: return "min";
    case c10d::ReduceOp::MAX: return "max";
    default:
      ATB_FAIL(ERROR_INVALID_PARAM, "backend 'atb_ops' supports ReduceOp SUM, AVG, PRODUCT, MIN and MAX; got ReduceOp ",
               static_cast<int>(op.op_), " (BAND/BOR/BXOR/PREMUL_SUM are not offered)");
  }
}

// AVG divides a sum by the group size, so it needs a floating dtype (integer averages would truncate silently);
// checked before any communication.
void checkAverage(const c10d::ReduceOp& op, const at::Tensor& t) {
  ATB_CHECK(op.op_ != c10d::ReduceOp::AVG || at::isFloatingType(t.scalar_type()), ERROR_INVALID_TENSOR_DTYPE,
            "ReduceOp.AVG needs a floating-point tensor, got ", t.scalar_type());
}

// The call's label, which every rank's call is compared by: AVG moves a sum and divides afterwards, so without a
// label of its own a rank averaging beside ranks summing would keep a result of its own, silently. "AVG" leads, as
// messages show a long label's first 22 characters.
const char* labelFor(const c10d::ReduceOp& op, const char* sum, const char* average) {
  return op.op_ == c10d::ReduceOp::AVG ? average : sum;
}

void finishAverage(const c10d::ReduceOp& op, at::Tensor& t, int size) {
  if (op.op_ == c10d::ReduceOp::AVG) t.div_(size);
}

// torch.distributed passes one tensor per call on CPU (lists are a multi-device legacy).
at::Tensor& single(std::vector<at::Tensor>& tensors, const char* what) {
  ATB_CHECK(tensors.size() == 1, ERROR_INVALID_PARAM, "backend 'atb_ops' ", what, " takes one tensor per call, got ",
            tensors.size());
  return tensors[0];
}

// A contiguous tensor to write through, copied back into `target` afterwards when it had to be a copy.
struct Writable {
  explicit Writable(at::Tensor& t) : target(t), work(t.is_contiguous() ? t : t.contiguous()) {}
  void commit() {
    if (!work.is_same(target)) target.copy_(work);
  }
  at::Tensor& target;
  at::Tensor work;
};

bool isPeerFault(Status s) {
  return s == Status::ERROR_COMM_TIMEOUT || s == Status::ERROR_COMM_PEER_DIED || s == Status::ERROR_COMM_PEER_LEFT ||
         s == Status::ERROR_RT_FAIL;
}

}  // namespace

C10dBackend::C10dBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                         std::chrono::milliseconds timeout, const std::string& groupName)
    : c10d::Backend(rank, size), domain_("c10d:" + groupName) {
  // "auto" on CPU: shared memory where every rank is on this host, two levels (shm in a host, gloo between hosts)
  // or one gloo group where they are not, decided by a host census over the group's store at creation
  // (comm/host_span.h).
  CommConfig config = configForGroup("auto", rank, size, domain_, "", c10::Device(c10::kCPU), nullptr);
  config.hostsChecked = false;
  // The group's communicator waits as long as init_process_group(timeout=...) says, and its messages say so; an
  // ATB_OPS_TIMEOUT that is set and shorter bounds it too (a lost host is named within it).
  const std::chrono::milliseconds groupTimeout = std::min<std::chrono::milliseconds>(timeout, kMaxTimeout);
  if (!config.options.timeout.fromEnvironment || groupTimeout < config.options.timeout.value) {
    config.options.timeout.value = groupTimeout;
    config.options.timeout.fromGroup = true;
  }
  config.store = std::make_shared<GivenStore>(GivenStore{store});
  // Its own communicator, never another live group's (group names are reused after destroy_process_group).
  config.groupId = this;
  try {
    comm_ = blockingCall([&] { return acquireCommunicator(config); });
  } catch (const StatusError& e) {
    if (isPeerFault(e.status())) C10_THROW_ERROR(DistBackendError, e.what_without_backtrace());
    throw;
  }
}

template <typename F>
c10::intrusive_ptr<c10d::Work> C10dBackend::run(const char* label, std::vector<at::Tensor> outputs, F&& body) {
  try {
    const CallLabel surface(label);
    blockingCall([&] { body(*comm_); });
  } catch (const StatusError& e) {
    // A peer that died or never came: torch users catch these as DistBackendError (the message names the peer).
    if (isPeerFault(e.status()) || comm_->failed()) {
      C10_THROW_ERROR(DistBackendError, e.what_without_backtrace());
    }
    throw;
  }
  return doneWork(std::move(outputs));
}

c10::intrusive_ptr<c10d::Work> C10dBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                      const c10d::BroadcastOptions& opts) {
  at::Tensor& t = single(tensors, "broadcast");
  return run("torch.distributed.broadcast", tensors, [&](Communicator& comm) {
    Writable w(t);
    framework::broadcastInPlace(comm, w.work, opts.rootRank);
    w.commit();
  });
}

c10::intrusive_ptr<c10d::Work> C10dBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                      const c10d::AllreduceOptions& opts) {
  at::Tensor& t = single(tensors, "all_reduce");
  const std::string op = reduceName(opts.reduceOp);
  checkAverage(opts.reduceOp, t);
  return run(labelFor(opts.reduceOp, "torch.distributed.all_reduce", "AVG torch.distributed.all_reduce"), tensors,
             [&](Communicator& comm) {
               Writable w(t);
               framework::allReduceInPlace(comm, w.work, op);
               finishAverage(opts.reduceOp, w.work, comm.size());
               w.commit();
             });
}

c10::intrusive_ptr<c10d::Work> C10dBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                const c10d::AllreduceCoalescedOptions& opts) {
  const std::string op = reduceName(opts.reduceOp);
  for (const at::Tensor& t : tensors) checkAverage(opts.reduceOp, t);
  return run(
      labelFor(opts.reduceOp, "torch.distributed.all_reduce_coalesced", "AVG torch.distributed.all_reduce_coalesced"),
      tensors, [&](Communicator& comm) {
        for (at::Tensor& t : tensors) {
          Writable w(t);
          framework::allReduceInPlace(comm, w.work, op);
          finishAverage(opts.reduceOp, w.work, comm.size());
          w.commit();
        }
      });
}

c10::intrusive_ptr<c10d::Work> C10dBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                      std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions&) {
  at::Tensor& in = single(inputs, "all_gather");
  ATB_CHECK(outputs.size() == 1, ERROR_INVALID_PARAM, "backend 'atb_ops' all_gather takes one output list, got ",
            outputs.size());
  std::vector<at::Tensor>& outs = outputs[0];
  return run("torch.distributed.all_gather", outs,
             [&](Communicator& comm) { framework::allGatherList(comm, outs, in.contiguous()); });
}

c10::intrusive_ptr<c10d::Work> C10dBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                            const c10d::AllgatherOptions&) {
  return run("torch.distributed.all_gather_into_tensor", {output}, [&](Communicator& comm) {
    Writable w(output);
    framework::allGatherInto(comm, w.work, input.contiguous());
    w.commit();
  });
}

c10::intrusive_ptr<c10d::Work> C10dBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                            std::vector<at::Tensor>& inputs,
                                                                            const c10d::AllgatherOptions&) {
  ATB_CHECK(outputs.size() == inputs.size(), ERROR_INVALID_PARAM, "all_gather_into_tensor_coalesced: ", outputs.size(),
            " outputs for ", inputs.size(), " inputs");
  return run("torch.distributed.all_gather_into_tensor", outputs, [&](Communicator& comm) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      Writable w(outputs[i]);
      framework::allGatherInto(comm, w.work, inputs[i].contiguous());
      w.commit();
    }
  });
}

c10::intrusive_ptr<c10d::Work> C10dBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                           std::vector<std::vector<at::Tensor>>& inputs,
                                                           const c10d::ReduceScatterOptions& opts) {
  at::Tensor& out = single(outputs, "reduce_scatter");
  ATB_CHECK(inputs.size() == 1, ERROR_INVALID_PARAM, "backend 'atb_ops' reduce_scatter takes one input list, got ",
            inputs.size());
  std::vector<at::Tensor>& ins = inputs[0];
  const std::string op = reduceName(opts.reduceOp);
  checkAverage(opts.reduceOp, out);
  return run(labelFor(opts.reduceOp, "torch.distributed.reduce_scatter", "AVG torch.distributed.reduce_scatter"),
             outputs, [&](Communicator& comm) {
               Writable w(out);
               framework::reduceScatterList(comm, w.work, ins, op);
               finishAverage(opts.reduceOp, w.work, comm.size());
               w.commit();
             });
}

c10::intrusive_ptr<c10d::Work> C10dBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::ReduceScatterOptions& opts) {
  const std::string op = reduceName(opts.reduceOp);
  checkAverage(opts.reduceOp, output);
  return run(
      labelFor(opts.reduceOp, "torch.distributed.reduce_scatter_tensor", "AVG torch.distributed.reduce_scatter_tensor"),
      {output}, [&](Communicator& comm) {
        Writable w(output);
        framework::reduceScatterInto(comm, w.work, input.contiguous(), op);
        finishAverage(opts.reduceOp, w.work, comm.size());
        w.commit();
      });
}

c10::intrusive_ptr<c10d::Work> C10dBackend::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                            std::vector<at::Tensor>& inputs,
                                                                            const c10d::ReduceScatterOptions& opts) {
  ATB_CHECK(outputs.size() == inputs.size(), ERROR_INVALID_PARAM, "reduce_scatter_tensor_coalesced: ", outputs.size(),
            " outputs for ", inputs.size(), " inputs");
  const std::string op = reduceName(opts.reduceOp);
  for (const at::Tensor& t : outputs) checkAverage(opts.reduceOp, t);
  return run(
      labelFor(opts.reduceOp, "torch.distributed.reduce_scatter_tensor", "AVG torch.distributed.reduce_scatter_tensor"),
      outputs, [&](Communicator& comm) {
        for (size_t i = 0; i < outputs.size(); ++i) {
          Writable w(outputs[i]);
          framework::reduceScatterInto(comm, w.work, inputs[i].contiguous(), op);
          finishAverage(opts.reduceOp, w.work, comm.size());
          w.commit();
        }
      });
}

c10::intrusive_ptr<c10d::Work> C10dBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                          std::vector<int64_t>& outputSplitSizes,
                                                          std::vector<int64_t>& inputSplitSizes,
                                                          const c10d::AllToAllOptions&) {
  // torch passes empty split lists for "equal splits of dim 0", the body's nullopt.
  const framework::Splits outSplits =
      outputSplitSizes.empty() ? framework::Splits() : framework::Splits(outputSplitSizes);
  const framework::Splits inSplits = inputSplitSizes.empty() ? framework::Splits() : framework::Splits(inputSplitSizes);
  return run("torch.distributed.all_to_all_single", {output}, [&](Communicator& comm) {
    // alltoall_single writes strided or overlapping outputs through a temporary itself.
    framework::alltoallSingle(comm, output, input.contiguous(), outSplits, inSplits);
  });
}

c10::intrusive_ptr<c10d::Work> C10dBackend::alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                                     const c10d::AllToAllOptions&) {
  return run("torch.distributed.all_to_all", outputs, [&](Communicator& comm) {
    std::vector<at::Tensor> ins;
    for (const at::Tensor& t : inputs) ins.push_back(t.contiguous());
    framework::allToAllLists(comm, outputs, ins);
  });
}

c10::intrusive_ptr<c10d::Work> C10dBackend::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  at::Tensor& t = single(tensors, "send");
  {
    std::lock_guard<std::mutex> lock(pendingMutex_);
    if (coalescing_) {
      framework::checkPeer(getSize(), getRank(), t, dstRank, "dst");
      pending_.push_back(P2pOp{true, t.contiguous(), dstRank, tag});
      return doneWork({t});  // batch_isend_irecv waits on endCoalescing's Work
    }
  }
  return run("torch.distributed.send", tensors,
             [&](Communicator& comm) { framework::send(comm, t.contiguous(), dstRank, tag); });
}

c10::intrusive_ptr<c10d::Work> C10dBackend::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  at::Tensor& t = single(tensors, "recv");
  ATB_CHECK(t.is_contiguous(), ERROR_INVALID_PARAM, "backend 'atb_ops' recv needs a contiguous tensor, got strides ",
            t.strides());
  {
    std::lock_guard<std::mutex> lock(pendingMutex_);
    if (coalescing_) {
      framework::checkPeer(getSize(), getRank(), t, srcRank, "src");
      pending_.push_back(P2pOp{false, t, srcRank, tag});
      return doneWork({t});
    }
  }
  return run("torch.distributed.recv", tensors, [&](Communicator& comm) { framework::recv(comm, t, srcRank, tag); });
}

c10::intrusive_ptr<c10d::Work> C10dBackend::barrier(const c10d::BarrierOptions&) {
  return run("torch.distributed.barrier", {}, [](Communicator& comm) { comm.barrier(); });
}

void C10dBackend::startCoalescing() {
  std::lock_guard<std::mutex> lock(pendingMutex_);
  coalescing_ = true;
  pending_.clear();
}

c10::intrusive_ptr<c10d::Work> C10dBackend::endCoalescing() {
  std::vector<P2pOp> ops;
  {
    std::lock_guard<std::mutex> lock(pendingMutex_);
    coalescing_ = false;
    ops.swap(pending_);
  }
  std::vector<at::Tensor> tensors;
  for (const P2pOp& op : ops) tensors.push_back(op.tensor);
  if (ops.empty()) return doneWork({});
  return run("torch.distributed.batch_isend_irecv", tensors, [&](Communicator& comm) { comm.sendRecv(ops); });
}

}  // namespace atb_ops
