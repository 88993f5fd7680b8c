// What ATB's C++ API returns for bad input, on one rank: ATB's Status codes, never an exception or a crash. Also the
// API's bookkeeping (InferShape, GetName, Clone/UpdateOperationParam, stream ids, Utils) and ELEWISE_CAST.
//
//   atb_bad_inputs          prints "bad inputs: ok, N checks" and exits 0 when every check passed
//
// tests/atb_cpp/test_atb_cpp_api.py also reads its stderr: every refusal is logged with ATB's error name.
#include <cstdio>
#include <vector>

#include "atb_test_util.h"

namespace {

using atbtest::CountTensor;
using atbtest::DeviceTensor;

atb::infer::AllGatherParam oneRank() {
  atb::infer::AllGatherParam p;
  p.rank = 0;
  p.rankSize = 1;
  return p;
}

atb::VariantPack pack(std::initializer_list<atb::Tensor> in, std::initializer_list<atb::Tensor> out) {
  atb::VariantPack p;
  p.inTensors = in;
  p.outTensors = out;
  return p;
}

void creation() {
  atb::Operation* op = nullptr;
  EXPECT_STATUS(atb::CreateContext(nullptr), atb::ERROR_INVALID_PARAM);
  EXPECT_STATUS(atb::CreateOperation(oneRank(), nullptr), atb::ERROR_INVALID_PARAM);

  atb::infer::AllGatherParam p = oneRank();
  p.rankSize = 0;
  EXPECT_STATUS(atb::CreateOperation(p, &op), atb::ERROR_INVALID_PARAM);
  EXPECT_TRUE(op == nullptr, "a failed CreateOperation returns no operation");
  p = oneRank();
  p.rank = 3;
  EXPECT_STATUS(atb::CreateOperation(p, &op), atb::ERROR_INVALID_PARAM);
  p = oneRank();
  p.backend = "nvlink";
  EXPECT_STATUS(atb::CreateOperation(p, &op), atb::ERROR_INVALID_PARAM);
  p = oneRank();
  p.commMode = static_cast<atb::infer::CommMode>(5);
  EXPECT_STATUS(atb::CreateOperation(p, &op), atb::ERROR_INVALID_PARAM);
  p = oneRank();
  p.rsv[3] = 1;
  EXPECT_STATUS(atb::CreateOperation(p, &op), atb::ERROR_INVALID_PARAM);

  atb::infer::SendParam send;
  send.rank = 0;
  send.rankSize = 2;
  send.destRank = 0;  // itself
  EXPECT_STATUS(atb::CreateOperation(send, &op), atb::ERROR_INVALID_PARAM);

  atb::infer::AllReduceParam reduce;
  reduce.rank = 0;
  reduce.rankSize = 1;
  reduce.allReduceType = "average";
  EXPECT_STATUS(atb::CreateOperation(reduce, &op), atb::ERROR_INVALID_PARAM);

  // Operators atb_ops does not emulate are refused by name (stderr is read by the pytest test).
  atb::infer::TransdataParam transdata;
  transdata.transdataType = atb::infer::TransdataParam::ND_TO_FRACTAL_NZ;
  EXPECT_STATUS(atb::CreateOperation(transdata, &op), atb::ERROR_INVALID_PARAM);
  atb::infer::ElewiseParam muls;
  muls.elewiseType = atb::infer::ElewiseParam::ELEWISE_MULS;
  EXPECT_STATUS(atb::CreateOperation(muls, &op), atb::ERROR_INVALID_PARAM);
  std::fprintf(stderr, "--- LinearParallelParam follows\n");
  // LinearParallelOperation's own param checks reach the caller (its type past ATB's ParallelType::MAX).
  atb::infer::LinearParallelParam linear;
  linear.rank = 0;
  linear.rankSize = 1;
  linear.type = static_cast<atb::infer::LinearParallelParam::ParallelType>(9);
  EXPECT_STATUS(atb::CreateOperation(linear, &op), atb::ERROR_INVALID_PARAM);
  // The MoE types' InferShape needs the descriptions only (ATB's: [maxOutputSize's rows, n]); the token counts, which
  // a description does not hold, are Setup's and Execute's to check.
  linear.type = atb::infer::LinearParallelParam::ALLTOALLVC_ALL_GATHER_GMM;
  linear.backend = "lcoc";
  linear.rankSize = 2;
  linear.transWeight = false;
  linear.moeInfo.epSize = 2;
  linear.moeInfo.localExpertNums = 2;
  linear.moeInfo.tpSize = 1;
  EXPECT_OK(atb::CreateOperation(linear, &op));
  atb::SVector<atb::TensorDesc> outDescs;
  EXPECT_OK(op->InferShape({atbtest::desc(ACL_FLOAT16, {9, 8}), atbtest::desc(ACL_FLOAT16, {2, 8, 4}),
                            atbtest::desc(ACL_INT32, {2, 4}), atbtest::desc(ACL_INT32, {12})},
                           outDescs));
  EXPECT_TRUE(outDescs.size() == 1 && outDescs[0].shape.dimNum == 2 && outDescs[0].shape.dims[0] == 12 &&
                  outDescs[0].shape.dims[1] == 4 && outDescs[0].dtype == ACL_FLOAT16,
              "ALLTOALLVC_ALL_GATHER_GMM InferShape gives [12, 4] float16");
  EXPECT_OK(atb::DestroyOperation(op));
  std::fprintf(stderr, "--- LinearParallelParam done\n");
}

void contexts() {
  atb::Context* context = nullptr;
  EXPECT_OK(atb::CreateContext(&context));
  EXPECT_TRUE(context->GetExecuteStream() == nullptr, "a new context has no stream");
  EXPECT_STATUS(context->SetExecuteStreams({}), atb::ERROR_INVALID_PARAM);
  EXPECT_STATUS(context->SetExecuteType(static_cast<atb::ExecuteType>(7)), atb::ERROR_INVALID_PARAM);
  EXPECT_OK(context->SetExecuteType(atb::EXECUTE_PRELAUNCH));
  EXPECT_TRUE(context->GetExecuteType() == atb::EXECUTE_PRELAUNCH, "GetExecuteType");
  EXPECT_STATUS(context->SetLaunchMode(static_cast<atb::LaunchMode>(2)), atb::ERROR_INVALID_PARAM);
  EXPECT_OK(context->SetAsyncTilingCopyStatus(true));
  EXPECT_TRUE(context->GetAsyncTilingCopyStatus(), "GetAsyncTilingCopyStatus");
  EXPECT_OK(atb::DestroyContext(context));
  EXPECT_STATUS(atb::DestroyContext(context), atb::ERROR_INVALID_CONTEXT_ADDR);
  EXPECT_OK(atb::DestroyContext(nullptr));

  atb::Context* tiled = nullptr;
  EXPECT_STATUS(atb::CreateContext(&tiled, 64, 64), atb::ERROR_INVALID_PARAM);
  EXPECT_OK(atb::CreateContext(&tiled, 128, 32));
  EXPECT_OK(atb::DestroyContext(tiled));
  atb::Context* allocating = nullptr;
  EXPECT_OK(atb::CreateContext(&allocating, [](size_t n) { return std::malloc(n); }, [](void* p) { std::free(p); }));
  EXPECT_OK(atb::DestroyContext(allocating));
}

// AllGather on one rank: [3, 4] -> [1, 3, 4].
void tensorsAndSetup(atb::Context* context, aclrtStream stream) {
  atb::Operation* op = nullptr;
  EXPECT_OK(atb::CreateOperation(oneRank(), &op));
  EXPECT_TRUE(op->GetName() == "AllGatherOperation", "GetName is " + op->GetName());
  EXPECT_TRUE(op->GetInputNum() == 1 && op->GetOutputNum() == 1, "AllGather takes 1 input, 1 output");
  std::vector<double> values(12);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i) - 3;
  DeviceTensor x(ACL_FLOAT, {3, 4}, values);
  DeviceTensor out(ACL_FLOAT, {1, 3, 4});
  uint64_t ws = 7;

  // Context: null, destroyed.
  EXPECT_STATUS(op->Setup(pack({x.tensor}, {out.tensor}), ws, nullptr), atb::ERROR_INVALID_PARAM);
  EXPECT_TRUE(ws == 0, "Setup sets the workspace size first");
  atb::Context* gone = nullptr;
  EXPECT_OK(atb::CreateContext(&gone));
  EXPECT_OK(atb::DestroyContext(gone));
  EXPECT_STATUS(op->Setup(pack({x.tensor}, {out.tensor}), ws, gone), atb::ERROR_INVALID_CONTEXT_ADDR);

  // Counts of tensors.
  EXPECT_STATUS(op->Setup(pack({x.tensor, x.tensor}, {out.tensor}), ws, context), atb::ERROR_INVALID_IN_TENSOR_NUM);
  EXPECT_STATUS(op->Setup(pack({x.tensor}, {}), ws, context), atb::ERROR_INVALID_IN_TENSOR_NUM);

  // Memory: null, host memory, freed, too small, host memory from aclrtMallocHost.
  atb::Tensor bad = x.tensor;
  bad.deviceData = nullptr;
  EXPECT_STATUS(op->Setup(pack({bad}, {out.tensor}), ws, context), atb::ERROR_INVALID_PARAM);
  std::vector<float> hostBuffer(12);
  bad.deviceData = hostBuffer.data();
  EXPECT_STATUS(op->Setup(pack({bad}, {out.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_ADDR);
  void* pinned = nullptr;
  EXPECT_OK(aclrtMallocHost(&pinned, x.tensor.dataSize));
  bad.deviceData = pinned;
  EXPECT_STATUS(op->Setup(pack({bad}, {out.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_ADDR);
  EXPECT_OK(aclrtFreeHost(pinned));
  void* freed = nullptr;
  EXPECT_OK(aclrtMalloc(&freed, x.tensor.dataSize, ACL_MEM_MALLOC_HUGE_FIRST));
  EXPECT_OK(aclrtFree(freed));
  bad.deviceData = freed;
  EXPECT_STATUS(op->Setup(pack({bad}, {out.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_ADDR);
  void* small = nullptr;
  EXPECT_OK(aclrtMalloc(&small, 8, ACL_MEM_MALLOC_HUGE_FIRST));
  bad.deviceData = small;
  EXPECT_STATUS(op->Setup(pack({bad}, {out.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_ADDR);
  EXPECT_OK(aclrtFree(small));

  // Sizes, shapes, dtypes, formats.
  bad = x.tensor;
  bad.dataSize = 40;
  EXPECT_STATUS(op->Setup(pack({bad}, {out.tensor}), ws, context), atb::ERROR_INVALID_PARAM);
  bad = x.tensor;
  bad.desc.shape.dimNum = 9;  // ATB's TensorCheck::CheckTensorShape
  EXPECT_STATUS(op->Setup(pack({bad}, {out.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_DIM);
  bad.desc.shape.dimNum = 0;
  EXPECT_STATUS(op->Setup(pack({bad}, {out.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_DIM);
  // Eight dims pass this layer (MAX_DIM) and AllGather's own check refuses them, with its code (ATB's numbers).
  DeviceTensor eightDims(ACL_FLOAT, {1, 1, 1, 1, 1, 1, 3, 4}, values);
  EXPECT_STATUS(op->Setup(pack({eightDims.tensor}, {out.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_DIM);
  EXPECT_TRUE(atb::ERROR_INVALID_TENSOR_DIM == 8 && atb::ERROR_INVALID_TENSOR_SIZE == 9, "ATB's numbering");
  bad = x.tensor;
  bad.desc.shape.dims[0] = -3;  // no size Utils::GetTensorSize can give
  EXPECT_STATUS(op->Setup(pack({bad}, {out.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_SIZE);
  bad = x.tensor;
  bad.desc.dtype = static_cast<aclDataType>(999);
  EXPECT_STATUS(op->Setup(pack({bad}, {out.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_SIZE);
  bad = x.tensor;
  bad.desc.dtype = ACL_UINT32;
  EXPECT_STATUS(op->Setup(pack({bad}, {out.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_DTYPE);
  bad = x.tensor;
  bad.desc.format = ACL_FORMAT_FRACTAL_NZ;
  EXPECT_STATUS(op->Setup(pack({bad}, {out.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_FORMAT);
  DeviceTensor wrongDtype(ACL_FLOAT16, {1, 3, 4});
  // ATB's CheckIniMatch: a dtype outside the operator's table.
  EXPECT_STATUS(op->Setup(pack({x.tensor}, {wrongDtype.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_INI_MATCH);
  DeviceTensor wrongShape(ACL_FLOAT, {1, 4, 3});  // ATB's SetupCheckImpl: ERROR_INVALID_TENSOR_DIM
  EXPECT_STATUS(op->Setup(pack({x.tensor}, {wrongShape.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_DIM);

  // Execute: before Setup, without a stream, on another context, with new tensors, on a destroyed stream.
  EXPECT_STATUS(op->Execute(pack({x.tensor}, {out.tensor}), nullptr, 0, context), atb::ERROR_INVALID_PARAM);
  atb::Context* streamless = nullptr;
  EXPECT_OK(atb::CreateContext(&streamless));
  EXPECT_OK(op->Setup(pack({x.tensor}, {out.tensor}), ws, streamless));
  EXPECT_STATUS(op->Execute(pack({x.tensor}, {out.tensor}), nullptr, 0, streamless), atb::ERROR_INVALID_PARAM);
  EXPECT_OK(op->Setup(pack({x.tensor}, {out.tensor}), ws, context));
  EXPECT_STATUS(op->Execute(pack({x.tensor}, {out.tensor}), nullptr, 0, streamless), atb::ERROR_INVALID_PARAM);
  DeviceTensor bigger(ACL_FLOAT, {4, 4});
  DeviceTensor biggerOut(ACL_FLOAT, {1, 4, 4});
  EXPECT_STATUS(op->Execute(pack({bigger.tensor}, {biggerOut.tensor}), nullptr, 0, context), atb::ERROR_INVALID_PARAM);
  aclrtStream doomed = nullptr;
  EXPECT_OK(aclrtCreateStream(&doomed));
  EXPECT_OK(streamless->SetExecuteStream(doomed));
  EXPECT_OK(aclrtDestroyStream(doomed));
  EXPECT_OK(op->Setup(pack({x.tensor}, {out.tensor}), ws, streamless));
  EXPECT_STATUS(op->Execute(pack({x.tensor}, {out.tensor}), nullptr, 0, streamless), atb::ERROR_INVALID_STREAM);
  EXPECT_OK(atb::DestroyContext(streamless));
  // A failed Setup leaves nothing to execute.
  EXPECT_STATUS(op->Setup(pack({x.tensor}, {wrongShape.tensor}), ws, context), atb::ERROR_INVALID_TENSOR_DIM);
  EXPECT_STATUS(op->Execute(pack({x.tensor}, {out.tensor}), nullptr, 0, context), atb::ERROR_INVALID_PARAM);

  // And the good call still works after all of it, with the right values.
  atbtest::runOperation(op, pack({x.tensor}, {out.tensor}), context, stream);
  atbtest::expectValues(out.download(), values, "one-rank AllGather");

  // Stream ids pick one of the context's streams.
  EXPECT_OK(atb::SetExecuteStreamId(op, 1));
  EXPECT_TRUE(atb::GetExecuteStreamId(op) == 1, "GetExecuteStreamId");
  EXPECT_OK(op->Setup(pack({x.tensor}, {out.tensor}), ws, context));
  EXPECT_STATUS(op->Execute(pack({x.tensor}, {out.tensor}), nullptr, 0, context), atb::ERROR_INVALID_PARAM);
  EXPECT_OK(context->SetExecuteStreams({stream, stream}));
  EXPECT_OK(op->Execute(pack({x.tensor}, {out.tensor}), nullptr, 0, context));
  EXPECT_OK(context->SetExecuteStreams({stream}));
  EXPECT_OK(atb::SetExecuteStreamId(op, 0));

  // Operations: clone, update, destroy.
  atb::infer::AllGatherParam cloned;
  EXPECT_OK(atb::CloneOperationParam(op, cloned));
  EXPECT_TRUE(cloned.rank == 0 && cloned.rankSize == 1 && cloned.backend == "hccl", "CloneOperationParam");
  atb::infer::AllReduceParam otherType;
  EXPECT_STATUS(atb::CloneOperationParam(op, otherType), atb::ERROR_INVALID_PARAM);
  atb::infer::AllGatherParam invalid = oneRank();
  invalid.rankSize = -1;
  EXPECT_STATUS(atb::UpdateOperationParam(op, invalid), atb::ERROR_INVALID_PARAM);
  EXPECT_OK(op->Setup(pack({x.tensor}, {out.tensor}), ws, context));  // the old param is kept
  atb::infer::AllGatherParam renamed = oneRank();
  renamed.commDomain = "renamed";
  EXPECT_OK(atb::UpdateOperationParam(op, renamed));
  EXPECT_STATUS(op->Execute(pack({x.tensor}, {out.tensor}), nullptr, 0, context), atb::ERROR_INVALID_PARAM);
  atbtest::runOperation(op, pack({x.tensor}, {out.tensor}), context, stream);
  EXPECT_OK(atb::CloneOperationParam(op, cloned));
  EXPECT_TRUE(cloned.commDomain == "renamed", "CloneOperationParam after an update");

  EXPECT_OK(atb::DestroyOperation(op));
  EXPECT_STATUS(atb::DestroyOperation(op), atb::ERROR_INVALID_OPERATION_ADDR);
  EXPECT_STATUS(atb::CloneOperationParam(op, cloned), atb::ERROR_INVALID_OPERATION_ADDR);
  EXPECT_STATUS(atb::UpdateOperationParam(op, oneRank()), atb::ERROR_INVALID_OPERATION_ADDR);
  EXPECT_STATUS(atb::SetExecuteStreamId(op, 0), atb::ERROR_INVALID_OPERATION_ADDR);
  EXPECT_OK(atb::DestroyOperation(nullptr));
}

// AllToAllVV2 on one rank: counts from hostData, checked before anything moves.
void countTensors(atb::Context* context, aclrtStream stream) {
  atb::infer::AllToAllVV2Param p;
  p.rank = 0;
  p.rankSize = 1;
  atb::Operation* op = nullptr;
  EXPECT_OK(atb::CreateOperation(p, &op));
  DeviceTensor x(ACL_INT32, {5}, {1, 2, 3, 4, 5});
  CountTensor sendCounts({3}), sdispls({1}), recvCounts({3}), rdispls({0});
  DeviceTensor shape(ACL_INT32, {3});
  DeviceTensor out(ACL_INT32, {1, 3});
  uint64_t ws = 0;
  const auto vv2 = [&](const atb::Tensor& sc, const atb::Tensor& shapeTensor) {
    return pack({x.tensor, sc, sdispls.tensor, recvCounts.tensor, rdispls.tensor, shapeTensor}, {out.tensor});
  };
  atbtest::runOperation(op, vv2(sendCounts.tensor, shape.tensor), context, stream);
  atbtest::expectValues(out.download(), {2, 3, 4}, "one-rank AllToAllVV2");

  atb::Tensor noHost = sendCounts.tensor;
  noHost.hostData = nullptr;
  EXPECT_STATUS(op->Setup(vv2(noHost, shape.tensor), ws, context), atb::ERROR_INVALID_PARAM);
  atb::Tensor deviceAsHost = sendCounts.tensor;
  deviceAsHost.hostData = sendCounts.tensor.deviceData;
  EXPECT_STATUS(op->Setup(vv2(deviceAsHost, shape.tensor), ws, context), atb::ERROR_INVALID_TENSOR_ADDR);
  CountTensor tooMany({6});  // sdispls 1 + 6 > 5 elements of x
  EXPECT_STATUS(op->Setup(vv2(tooMany.tensor, shape.tensor), ws, context), atb::ERROR_INVALID_PARAM);
  // int32 counts: ATB's are int64.
  std::vector<int32_t> narrowCounts{3};
  DeviceTensor narrowDevice(ACL_INT32, {1}, {3});
  atb::Tensor narrow = narrowDevice.tensor;
  narrow.hostData = narrowCounts.data();
  EXPECT_STATUS(op->Setup(vv2(narrow, shape.tensor), ws, context), atb::ERROR_INVALID_TENSOR_DTYPE);
  DeviceTensor wrongShape(ACL_INT32, {2});
  EXPECT_STATUS(op->Setup(vv2(sendCounts.tensor, wrongShape.tensor), ws, context), atb::ERROR_INVALID_TENSOR_DIM);
  // tensorForInferShape is read for its shape only: hostData alone will do.
  std::vector<int32_t> shapeHost(3);
  atb::Tensor hostShape = shape.tensor;
  hostShape.deviceData = nullptr;
  hostShape.hostData = shapeHost.data();
  atbtest::runOperation(op, vv2(sendCounts.tensor, hostShape), context, stream);
  EXPECT_OK(atb::DestroyOperation(op));
}

// ATB's demo helper: float host data cast to float16 / bfloat16 on the "device", and back.
void elewiseCast(atb::Context* context, aclrtStream stream) {
  const std::vector<double> values{0.5, -2.0, 1024.0, 3.25, -0.125, 65504.0};
  DeviceTensor x(ACL_FLOAT, {2, 3}, values);
  for (aclDataType to : {ACL_FLOAT16, ACL_BF16, ACL_INT32}) {
    DeviceTensor y(to, {2, 3});
    atb::infer::ElewiseParam cast;
    cast.elewiseType = atb::infer::ElewiseParam::ELEWISE_CAST;
    cast.outTensorType = to;
    atb::Operation* op = nullptr;
    EXPECT_OK(atb::CreateOperation(cast, &op));
    EXPECT_TRUE(op->GetName() == "ElewiseOperation", "ElewiseOperation's name");
    atb::SVector<atb::TensorDesc> outDescs;
    EXPECT_OK(op->InferShape({x.tensor.desc}, outDescs));
    EXPECT_TRUE(outDescs.size() == 1 && outDescs[0].dtype == to && outDescs[0].shape.dimNum == 2,
                "ELEWISE_CAST InferShape");
    atbtest::runOperation(op, pack({x.tensor}, {y.tensor}), context, stream);
    std::vector<double> want = atbtest::decode(atbtest::encode(values, to), to);
    if (to == ACL_INT32) want = {0, -2, 1024, 3, 0, 65504};  // truncated toward zero
    atbtest::expectValues(y.download(), want, "ELEWISE_CAST to " + std::to_string(to));
    EXPECT_OK(atb::DestroyOperation(op));
  }
  atb::infer::ElewiseParam badCast;
  badCast.elewiseType = atb::infer::ElewiseParam::ELEWISE_CAST;
  badCast.outTensorType = ACL_COMPLEX64;
  atb::Operation* op = nullptr;
  EXPECT_STATUS(atb::CreateOperation(badCast, &op), atb::ERROR_INVALID_PARAM);
}

void utils() {
  atb::Tensor t;
  t.desc = atbtest::desc(ACL_FLOAT16, {2, 3, 4});
  EXPECT_TRUE(atb::Utils::GetTensorSize(t) == 48 && atb::Utils::GetTensorNumel(t) == 24, "GetTensorSize/Numel");
  t.desc = atbtest::desc(ACL_INT64, {});
  EXPECT_TRUE(atb::Utils::GetTensorSize(t) == 0, "no dims: size 0, as ATB");
  t.desc = atbtest::desc(ACL_FLOAT, {4, 0});
  EXPECT_TRUE(atb::Utils::GetTensorSize(t) == 0, "an empty dim: size 0");
  EXPECT_TRUE(!atb::Utils::GetAtbVersion().empty(), "GetAtbVersion");
  EXPECT_STATUS(atb::Utils::SetLogLevel(static_cast<atb::LogLevel>(9)), atb::ERROR_INVALID_PARAM);
  const float scale = 1.0f;
  uint64_t bits = 0;
  atb::Utils::QuantParamConvert(&scale, &bits, 1);
  EXPECT_TRUE(bits == 0x3f800000u, "QuantParamConvert keeps the float's bits");
}

}  // namespace

int main() {
  try {
    EXPECT_OK(aclInit(nullptr));
    EXPECT_OK(aclrtSetDevice(0));
    creation();
    contexts();
    atb::Context* context = nullptr;
    aclrtStream stream = nullptr;
    EXPECT_OK(atb::CreateContext(&context));
    EXPECT_OK(aclrtCreateStream(&stream));
    EXPECT_OK(context->SetExecuteStream(stream));
    tensorsAndSetup(context, stream);
    countTensors(context, stream);
    elewiseCast(context, stream);
    utils();
    EXPECT_OK(aclrtDestroyStream(stream));
    EXPECT_OK(atb::DestroyContext(context));
    // After every refusal above, the log level can silence the library.
    EXPECT_OK(atb::Utils::SetLogLevel(atb::LogLevel::NONE));
    atb::Operation* op = nullptr;
    std::fprintf(stderr, "--- silenced\n");
    EXPECT_STATUS(atb::CreateOperation(atb::infer::TransdataParam(), &op), atb::ERROR_INVALID_PARAM);
    EXPECT_OK(aclrtResetDevice(0));
    EXPECT_OK(aclFinalize());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bad inputs: FAILED after %d checks: %s\n", atbtest::checkCount(), e.what());
    return 1;
  }
  std::printf("bad inputs: ok, %d checks\n", atbtest::checkCount());
  return 0;
}
