// NcclApi over the real libnccl and CUDA runtime. Compiled only when torch has CUDA and nccl.h is found
// (setup.py: nccl_build()); scripts/compile_check_nccl.sh compiles it against the nvidia-nccl wheel's
// header on machines without a GPU, so the mirrors below are checked in CI.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <type_traits>

#include "comm/nccl/nccl_api.h"

namespace atb_ops::nccl {
namespace {

// The opaque mirrors in nccl_api.h must be NCCL's own values and sizes.
static_assert(sizeof(ncclUniqueId) == kUniqueIdBytes, "ncclUniqueId is not 128 bytes");
static_assert(std::is_pointer<ncclComm_t>::value && std::is_pointer<cudaStream_t>::value,
              "ncclComm_t and cudaStream_t must be pointers to pass as void*");
static_assert(static_cast<int>(NcclResult::Success) == ncclSuccess, "ncclSuccess");
static_assert(static_cast<int>(NcclResult::UnhandledCudaError) == ncclUnhandledCudaError, "ncclUnhandledCudaError");
static_assert(static_cast<int>(NcclResult::SystemError) == ncclSystemError, "ncclSystemError");
static_assert(static_cast<int>(NcclResult::InternalError) == ncclInternalError, "ncclInternalError");
static_assert(static_cast<int>(NcclResult::InvalidArgument) == ncclInvalidArgument, "ncclInvalidArgument");
static_assert(static_cast<int>(NcclResult::InvalidUsage) == ncclInvalidUsage, "ncclInvalidUsage");
static_assert(static_cast<int>(NcclResult::RemoteError) == ncclRemoteError, "ncclRemoteError");
static_assert(static_cast<int>(NcclResult::InProgress) == ncclInProgress, "ncclInProgress");
static_assert(static_cast<int>(NcclDataType::Int8) == ncclInt8, "ncclInt8");
static_assert(static_cast<int>(NcclDataType::Uint8) == ncclUint8, "ncclUint8");
static_assert(static_cast<int>(NcclDataType::Int32) == ncclInt32, "ncclInt32");
static_assert(static_cast<int>(NcclDataType::Uint32) == ncclUint32, "ncclUint32");
static_assert(static_cast<int>(NcclDataType::Int64) == ncclInt64, "ncclInt64");
static_assert(static_cast<int>(NcclDataType::Uint64) == ncclUint64, "ncclUint64");
static_assert(static_cast<int>(NcclDataType::Float16) == ncclFloat16, "ncclFloat16");
static_assert(static_cast<int>(NcclDataType::Float32) == ncclFloat32, "ncclFloat32");
static_assert(static_cast<int>(NcclDataType::Float64) == ncclFloat64, "ncclFloat64");
static_assert(static_cast<int>(NcclDataType::Bfloat16) == ncclBfloat16, "ncclBfloat16");
static_assert(static_cast<int>(NcclRedOp::Sum) == ncclSum && static_cast<int>(NcclRedOp::Prod) == ncclProd &&
                  static_cast<int>(NcclRedOp::Max) == ncclMax && static_cast<int>(NcclRedOp::Min) == ncclMin,
              "ncclRedOp_t");

NcclResult wrap(ncclResult_t r) {
  return static_cast<NcclResult>(r);
}
ncclComm_t comm(CommHandle c) {
  return static_cast<ncclComm_t>(c);
}
cudaStream_t stream(StreamHandle s) {
  return static_cast<cudaStream_t>(s);
}
ncclDataType_t type(NcclDataType t) {
  return static_cast<ncclDataType_t>(t);
}

class RealNcclApi final : public NcclApi {
 public:
  NcclResult groupStart() override { return wrap(ncclGroupStart()); }
  NcclResult groupEnd() override { return wrap(ncclGroupEnd()); }

  NcclResult send(const void* buf, size_t count, NcclDataType t, int peer, CommHandle c, StreamHandle s) override {
    return wrap(ncclSend(buf, count, type(t), peer, comm(c), stream(s)));
  }
  NcclResult recv(void* buf, size_t count, NcclDataType t, int peer, CommHandle c, StreamHandle s) override {
    return wrap(ncclRecv(buf, count, type(t), peer, comm(c), stream(s)));
  }
  NcclResult allGather(const void* sendBuf, void* recvBuf, size_t sendCount, NcclDataType t, CommHandle c,
                       StreamHandle s) override {
    return wrap(ncclAllGather(sendBuf, recvBuf, sendCount, type(t), comm(c), stream(s)));
  }

  NcclResult allReduce(const void* sendBuf, void* recvBuf, size_t count, NcclDataType t, NcclRedOp op, CommHandle c,
                       StreamHandle s) override {
    return wrap(ncclAllReduce(sendBuf, recvBuf, count, type(t), static_cast<ncclRedOp_t>(op), comm(c), stream(s)));
  }
  NcclResult reduceScatter(const void* sendBuf, void* recvBuf, size_t recvCount, NcclDataType t, NcclRedOp op,
                           CommHandle c, StreamHandle s) override {
    return wrap(
        ncclReduceScatter(sendBuf, recvBuf, recvCount, type(t), static_cast<ncclRedOp_t>(op), comm(c), stream(s)));
  }
  NcclResult broadcast(const void* sendBuf, void* recvBuf, size_t count, NcclDataType t, int root, CommHandle c,
                       StreamHandle s) override {
    return wrap(ncclBroadcast(sendBuf, recvBuf, count, type(t), root, comm(c), stream(s)));
  }

  NcclResult getUniqueId(UniqueId* id) override {
    ncclUniqueId raw;
    const ncclResult_t r = ncclGetUniqueId(&raw);
    std::memcpy(id->bytes.data(), raw.internal, kUniqueIdBytes);
    return wrap(r);
  }

  NcclResult commInitRank(CommHandle* out, int nranks, const UniqueId& id, int rank, bool blocking) override {
    ncclUniqueId raw;
    std::memcpy(raw.internal, id.bytes.data(), kUniqueIdBytes);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = blocking ? 1 : 0;
    ncclComm_t c = nullptr;
    const ncclResult_t r = ncclCommInitRankConfig(&c, nranks, raw, rank, &config);
    *out = c;
    return wrap(r);
  }

  NcclResult commDestroy(CommHandle c) override { return wrap(ncclCommDestroy(comm(c))); }
  NcclResult commAbort(CommHandle c) override { return wrap(ncclCommAbort(comm(c))); }

  NcclResult commGetAsyncError(CommHandle c, NcclResult* asyncError) override {
    ncclResult_t async = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(comm(c), &async);
    *asyncError = wrap(async);
    return wrap(r);
  }
  NcclResult commCount(CommHandle c, int* count) override { return wrap(ncclCommCount(comm(c), count)); }
  NcclResult commUserRank(CommHandle c, int* rank) override { return wrap(ncclCommUserRank(comm(c), rank)); }

  const char* getErrorString(NcclResult r) override { return ncclGetErrorString(static_cast<ncclResult_t>(r)); }
  const char* getLastError(CommHandle c) override { return ncclGetLastError(comm(c)); }

  StreamState streamQuery(StreamHandle s, std::string* error) override {
    const cudaError_t e = cudaStreamQuery(stream(s));
    if (e == cudaSuccess) return StreamState::Complete;
    if (e == cudaErrorNotReady) return StreamState::Pending;
    (void)cudaGetLastError();  // resets the last-error slot so unrelated later CUDA calls do not report it
    if (error != nullptr) *error = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    return StreamState::Failed;
  }
};

}  // namespace

NcclApi& realNcclApi() {
  static RealNcclApi api;
  return api;
}

}  // namespace atb_ops::nccl
