// The one door to NCCL (and the single CUDA stream query the waits need). Everything the backend does
// goes through NcclApi, with opaque handles, so the backend logic builds and is unit-tested on a machine
// with neither nccl.h nor CUDA (see nccl_mock_api.h); the real implementation (cuda/nccl_api_impl.cpp)
// is compiled only where both exist, and checks there that these mirrors match nccl.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include <c10/util/StringUtil.h>

namespace atb_ops::nccl {

// Opaque stand-ins: ncclComm_t and cudaStream_t are both pointers to incomplete structs.
using CommHandle = void*;
using StreamHandle = void*;

// Mirrors ncclResult_t (values pinned by static_asserts in cuda/nccl_api_impl.cpp).
enum class NcclResult : int32_t {
  Success = 0,
  UnhandledCudaError = 1,
  SystemError = 2,
  InternalError = 3,
  InvalidArgument = 4,
  InvalidUsage = 5,
  RemoteError = 6,
  InProgress = 7,
};

// Mirrors ncclDataType_t. NCCL has no bool, int16 or complex: such tensors travel as Uint8 bytes.
enum class NcclDataType : int32_t {
  Int8 = 0,
  Uint8 = 1,
  Int32 = 2,
  Uint32 = 3,
  Int64 = 4,
  Uint64 = 5,
  Float16 = 6,
  Float32 = 7,
  Float64 = 8,
  Bfloat16 = 9,
};

const char* dataTypeName(NcclDataType t);

// Mirrors ncclRedOp_t's built-in operators (the same order as atb_ops::ReduceOp).
enum class NcclRedOp : int32_t { Sum = 0, Prod = 1, Max = 2, Min = 3 };

// ncclUniqueId is a plain 128-byte struct (NCCL_UNIQUE_ID_BYTES).
constexpr size_t kUniqueIdBytes = 128;
struct UniqueId {
  std::array<char, kUniqueIdBytes> bytes{};
  bool operator==(const UniqueId& o) const { return bytes == o.bytes; }
};

// Hex text of an id (256 characters), for the rendezvous file and for tests.
std::string toHex(const UniqueId& id);
// Inverse of toHex; false on malformed text.
bool fromHex(const std::string& hex, UniqueId& id);

// What a stream query found (cudaStreamQuery: done, still running, or a CUDA error).
enum class StreamState { Complete, Pending, Failed };

class NcclApi {
 public:
  virtual ~NcclApi() = default;

  virtual NcclResult groupStart() = 0;
  virtual NcclResult groupEnd() = 0;
  virtual NcclResult send(const void* buf, size_t count, NcclDataType type, int peer, CommHandle comm,
                          StreamHandle stream) = 0;
  virtual NcclResult recv(void* buf, size_t count, NcclDataType type, int peer, CommHandle comm,
                          StreamHandle stream) = 0;
  virtual NcclResult allGather(const void* sendBuf, void* recvBuf, size_t sendCount, NcclDataType type, CommHandle comm,
                               StreamHandle stream) = 0;
  virtual NcclResult allReduce(const void* sendBuf, void* recvBuf, size_t count, NcclDataType type, NcclRedOp op,
                               CommHandle comm, StreamHandle stream) = 0;
  virtual NcclResult reduceScatter(const void* sendBuf, void* recvBuf, size_t recvCount, NcclDataType type,
                                   NcclRedOp op, CommHandle comm, StreamHandle stream) = 0;
  virtual NcclResult broadcast(const void* sendBuf, void* recvBuf, size_t count, NcclDataType type, int root,
                               CommHandle comm, StreamHandle stream) = 0;

  virtual NcclResult getUniqueId(UniqueId* id) = 0;
  // blocking=false creates a non-blocking communicator (ncclConfig_t.blocking = 0): calls may return
  // InProgress, and the caller polls commGetAsyncError, which is how init and collectives get a timeout.
  virtual NcclResult commInitRank(CommHandle* comm, int nranks, const UniqueId& id, int rank, bool blocking) = 0;
  virtual NcclResult commDestroy(CommHandle comm) = 0;
  virtual NcclResult commAbort(CommHandle comm) = 0;
  virtual NcclResult commGetAsyncError(CommHandle comm, NcclResult* asyncError) = 0;
  virtual NcclResult commCount(CommHandle comm, int* count) = 0;
  virtual NcclResult commUserRank(CommHandle comm, int* rank) = 0;

  virtual const char* getErrorString(NcclResult result) = 0;
  virtual const char* getLastError(CommHandle comm) = 0;

  // cudaStreamQuery; on Failed, `error` gets the CUDA error text.
  virtual StreamState streamQuery(StreamHandle stream, std::string* error) = 0;
};

// The process-wide real implementation over libnccl. Defined only in builds with CUDA and NCCL
// (cuda/nccl_api_impl.cpp); CPU-only code never refers to it.
NcclApi& realNcclApi();

// Raises ERROR_NCCL_FAIL: "<context>: <call> failed with ncclResult <n> (<ncclGetErrorString>); NCCL last
// error: '<ncclGetLastError>' [file:line]".
[[noreturn]] void raiseNcclError(NcclApi& api, CommHandle comm, NcclResult result, const char* call,
                                 const std::string& context, const char* file, int line);

}  // namespace atb_ops::nccl

// Checks one NcclApi call, named `ncclName` in the message. InProgress is not an error: it is how a
// non-blocking communicator says the work was accepted, and the caller then waits through
// commGetAsyncError (NcclComm::waitReady). `comm` feeds ncclGetLastError; the trailing arguments say what
// was being done, with values.
#define ATB_NCCL_CHECK(api, comm, ncclName, call, ...)                                                              \
  do {                                                                                                              \
    const ::atb_ops::nccl::NcclResult atbNcclResult_ = (call);                                                      \
    if (atbNcclResult_ != ::atb_ops::nccl::NcclResult::Success &&                                                   \
        atbNcclResult_ != ::atb_ops::nccl::NcclResult::InProgress) {                                                \
      ::atb_ops::nccl::raiseNcclError((api), (comm), atbNcclResult_, (ncclName), ::c10::str(__VA_ARGS__), __FILE__, \
                                      __LINE__);                                                                    \
    }                                                                                                               \
  } while (0)
