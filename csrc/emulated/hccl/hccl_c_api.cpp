// HCCL's C API (include/hccl/hccl.h: HCCL's signatures and types) implemented over atb_ops' CPU transport, so
// the HCCL backend, ATB's own tests and users' C/C++ programs run with real data on CPU ranks. CPU pointers play
// device memory; a stream argument is accepted and every call completes on the calling thread before it
// returns. Bad arguments and dead handles return HCCL's own codes (HCCL_E_PTR, HCCL_E_PARA, ...); a fault's
// full text is kept per thread (atbOpsHcclCpuLastError). This is not Huawei's library: it is installed as
// $ASCEND_HOME_PATH/lib64/libhccl.so of atb_ops' CANN-like layout.
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/from_blob.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <hccl/hccl.h>

#include "core/layout.h"
#include "core/reduce.h"
#include "core/status.h"
#include "emulated/hccl/comm_registry.h"
#include "emulated/hccl/cpu_comm.h"

using atb_ops::hccl_cpu::CpuComm;

namespace {

thread_local std::string lastError;
thread_local int32_t lastStatus = 0;  // atb_ops::Status of this thread's last failure

HcclResult fail(HcclResult code, const std::string& why, atb_ops::Status status = atb_ops::Status::ERROR_HCCL_FAIL) {
  lastError = why;
  lastStatus = static_cast<int32_t>(status);
  return code;
}

HcclResult toHcclResult(atb_ops::Status s) {
  switch (s) {
    case atb_ops::Status::ERROR_COMM_TIMEOUT: return HCCL_E_TIMEOUT;
    case atb_ops::Status::ERROR_COMM_PEER_DIED:
    case atb_ops::Status::ERROR_COMM_PEER_LEFT: return HCCL_E_REMOTE;
    case atb_ops::Status::ERROR_RT_FAIL:
    case atb_ops::Status::ERROR_INTERNAL_ERROR:
    case atb_ops::Status::ERROR_COMM_EMPTY: return HCCL_E_INTERNAL;
    default: return HCCL_E_PARA;
  }
}

// Runs `body` and turns what it throws into an HcclResult, keeping the message.
template <typename F>
HcclResult guarded(F&& body) {
  try {
    body();
    lastError.clear();
    return HCCL_SUCCESS;
  } catch (const atb_ops::StatusError& e) {
    return fail(toHcclResult(e.status()), e.what_without_backtrace(), e.status());
  } catch (const c10::Error& e) {
    return fail(HCCL_E_INTERNAL, e.what_without_backtrace());
  } catch (const std::exception& e) {
    return fail(HCCL_E_INTERNAL, e.what());
  }
}

std::string handleText(HcclComm comm) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", comm);
  return text;
}

// The torch dtype data of `type` is stored as; reductions need arithmetic, so unsigned 16/32/64-bit data
// (which torch cannot reduce) is refused there.
bool scalarTypeOf(HcclDataType type, c10::ScalarType* out) {
  switch (type) {
    case HCCL_DATA_TYPE_INT8: *out = at::kChar; return true;
    case HCCL_DATA_TYPE_INT16: *out = at::kShort; return true;
    case HCCL_DATA_TYPE_INT32: *out = at::kInt; return true;
    case HCCL_DATA_TYPE_INT64: *out = at::kLong; return true;
    case HCCL_DATA_TYPE_UINT8: *out = at::kByte; return true;
    case HCCL_DATA_TYPE_FP16: *out = at::kHalf; return true;
    case HCCL_DATA_TYPE_FP32: *out = at::kFloat; return true;
    case HCCL_DATA_TYPE_FP64: *out = at::kDouble; return true;
    case HCCL_DATA_TYPE_BFP16: *out = at::kBFloat16; return true;
    default: return false;
  }
}

int64_t sizeOf(HcclDataType type) {
  switch (type) {
    case HCCL_DATA_TYPE_INT8:
    case HCCL_DATA_TYPE_UINT8: return 1;
    case HCCL_DATA_TYPE_INT16:
    case HCCL_DATA_TYPE_UINT16:
    case HCCL_DATA_TYPE_FP16:
    case HCCL_DATA_TYPE_BFP16: return 2;
    case HCCL_DATA_TYPE_INT32:
    case HCCL_DATA_TYPE_UINT32:
    case HCCL_DATA_TYPE_FP32: return 4;
    case HCCL_DATA_TYPE_INT64:
    case HCCL_DATA_TYPE_UINT64:
    case HCCL_DATA_TYPE_FP64: return 8;
    default: return 0;
  }
}

// `count` elements of `type` at `ptr` as a tensor (no copy): typed when the collective computes, as bytes
// when it only moves data (every HCCL type then works).
at::Tensor typed(const void* ptr, uint64_t count, HcclDataType type) {
  c10::ScalarType t;
  ATB_CHECK(scalarTypeOf(type, &t), ERROR_INVALID_TENSOR_DTYPE, "HCCL data type ", static_cast<int>(type),
            " cannot be reduced on CPU");
  if (count == 0) return at::empty({0}, at::TensorOptions().dtype(t));
  return at::from_blob(const_cast<void*>(ptr), {static_cast<int64_t>(count)}, at::TensorOptions().dtype(t));
}

at::Tensor bytes(const void* ptr, uint64_t count, HcclDataType type) {
  const int64_t n = static_cast<int64_t>(count) * sizeOf(type);
  if (n == 0) return at::empty({0}, at::TensorOptions().dtype(at::kByte));
  return at::from_blob(const_cast<void*>(ptr), {n}, at::TensorOptions().dtype(at::kByte));
}

// A point-to-point payload: typed where torch has the type, so a size mismatch is reported in the caller's
// elements; as bytes otherwise.
at::Tensor payload(const void* ptr, uint64_t count, HcclDataType type) {
  c10::ScalarType t;
  return scalarTypeOf(type, &t) ? typed(ptr, count, type) : bytes(ptr, count, type);
}

atb_ops::ReduceOp reduceOpOf(HcclReduceOp op) {
  switch (op) {
    case HCCL_REDUCE_SUM: return atb_ops::ReduceOp::kSum;
    case HCCL_REDUCE_PROD: return atb_ops::ReduceOp::kProd;
    case HCCL_REDUCE_MAX: return atb_ops::ReduceOp::kMax;
    case HCCL_REDUCE_MIN: return atb_ops::ReduceOp::kMin;
    default: ATB_FAIL(ERROR_INVALID_PARAM, "HcclReduceOp ", static_cast<int>(op), " is not sum, prod, max or min");
  }
}

// Checks what every call needs. HCCL_CPU_FIND_COMM finds the live communicator of handle `comm` as `live` (kept alive
// for the call), or returns HCCL's code: HCCL_E_PTR for null, HCCL_E_PARA for a handle that was destroyed or never made
// here.
#define HCCL_CPU_FIND_COMM(comm)                                                                           \
  if ((comm) == nullptr) return fail(HCCL_E_PTR, std::string(__func__) + ": the HcclComm is null");        \
  const std::shared_ptr<CpuComm> live = atb_ops::hccl_cpu::findComm(comm);                                 \
  if (!live) {                                                                                             \
    return fail(HCCL_E_PARA, std::string(__func__) + ": HcclComm " + handleText(comm) +                    \
                                 " is not a live communicator (destroyed, or not made by HcclCommInit*)"); \
  }

#define HCCL_CPU_CHECK_TYPE(type) \
  if (sizeOf(type) == 0) return fail(HCCL_E_PARA, "unknown HcclDataType " + std::to_string(static_cast<int>(type)));

std::vector<int64_t> countsOf(const void* values, uint32_t n) {
  const auto* v = static_cast<const uint64_t*>(values);
  std::vector<int64_t> out;
  for (uint32_t i = 0; i < n; ++i) {
    ATB_CHECK(v[i] <= static_cast<uint64_t>(INT64_MAX), ERROR_INVALID_PARAM, "count or displacement ", i, " is ", v[i]);
    out.push_back(static_cast<int64_t>(v[i]));
  }
  return out;
}

// HCCL never touches a region of count 0, wherever its displacement points; the buffers' sizes are not
// known here (only pointers), so such a displacement is set to 0 before the layout check.
void clearEmptyDispls(const std::vector<int64_t>& counts, std::vector<int64_t>& displs) {
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) displs[i] = 0;
  }
}

int64_t extent(const std::vector<int64_t>& counts, const std::vector<int64_t>& displs) {
  int64_t end = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) end = std::max(end, displs[i] + counts[i]);
  }
  return end;
}

}  // namespace

extern "C" {

// Not part of HCCL: the full text of this thread's last failure (HcclGetErrorString only names codes).
__attribute__((visibility("default"))) const char* atbOpsHcclCpuLastError() {
  return lastError.c_str();
}

// Not part of HCCL: the atb_ops status of this thread's last failure (a peer that released the communicator is
// told apart from one that died, which HCCL's codes cannot say).
__attribute__((visibility("default"))) int32_t atbOpsHcclCpuLastStatus() {
  return lastStatus;
}

HcclResult HcclGetRootInfo(HcclRootInfo* rootInfo) {
  if (rootInfo == nullptr) return fail(HCCL_E_PTR, "HcclGetRootInfo: rootInfo is null");
  return guarded([&] {
    std::memset(rootInfo->internal, 0, HCCL_ROOT_INFO_BYTES);
    const std::string text = atb_ops::hccl_cpu::makeRootInfo(HCCL_ROOT_INFO_BYTES);
    std::memcpy(rootInfo->internal, text.data(), text.size());
  });
}

HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo* rootInfo, uint32_t rank, HcclComm* comm) {
  if (rootInfo == nullptr || comm == nullptr) return fail(HCCL_E_PTR, "HcclCommInitRootInfo: null argument");
  if (nRanks == 0 || rank >= nRanks) {
    return fail(HCCL_E_PARA,
                "HcclCommInitRootInfo: rank " + std::to_string(rank) + " of nRanks " + std::to_string(nRanks));
  }
  const atb_ops::hccl_cpu::RootInfo info = atb_ops::hccl_cpu::parseRootInfo(rootInfo->internal, HCCL_ROOT_INFO_BYTES);
  if (info.token.empty()) return fail(HCCL_E_PARA, "HcclCommInitRootInfo: rootInfo was not made by HcclGetRootInfo");
  return guarded([&] { *comm = atb_ops::hccl_cpu::registerComm(atb_ops::hccl_cpu::joinRootInfo(info, rank, nRanks)); });
}

HcclResult HcclCommInitClusterInfo(const char* clusterInfo, uint32_t rank, HcclComm* comm) {
  if (clusterInfo == nullptr || comm == nullptr) return fail(HCCL_E_PTR, "HcclCommInitClusterInfo: null argument");
  return guarded([&] { *comm = atb_ops::hccl_cpu::registerComm(atb_ops::hccl_cpu::joinRankTable(clusterInfo, rank)); });
}

// A comm name in `config` (hcclCommName) is what HcclGetCommName returns; the other options tune NPU
// hardware and have no meaning on CPU ranks.
static HcclResult applyConfig(const HcclCommConfig* config, HcclComm comm) {
  const std::shared_ptr<CpuComm> made = atb_ops::hccl_cpu::findComm(comm);
  const size_t n = strnlen(config->hcclCommName, COMM_NAME_MAX_LENGTH);
  if (made && n > 0) made->name.assign(config->hcclCommName, n);
  return HCCL_SUCCESS;
}

HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo* rootInfo, uint32_t rank,
                                      const HcclCommConfig* config, HcclComm* comm) {
  if (config == nullptr) return fail(HCCL_E_PTR, "HcclCommInitRootInfoConfig: config is null");
  const HcclResult rc = HcclCommInitRootInfo(nRanks, rootInfo, rank, comm);
  return rc == HCCL_SUCCESS ? applyConfig(config, *comm) : rc;
}

HcclResult HcclCommInitClusterInfoConfig(const char* clusterInfo, uint32_t rank, HcclCommConfig* config,
                                         HcclComm* comm) {
  if (config == nullptr) return fail(HCCL_E_PTR, "HcclCommInitClusterInfoConfig: config is null");
  const HcclResult rc = HcclCommInitClusterInfo(clusterInfo, rank, comm);
  return rc == HCCL_SUCCESS ? applyConfig(config, *comm) : rc;
}

HcclResult HcclCommInitAll(uint32_t ndev, int32_t* devices, HcclComm* comms) {
  if (devices == nullptr || comms == nullptr || ndev == 0) return fail(HCCL_E_PARA, "HcclCommInitAll: bad arguments");
  // The ranks are threads of this process that meet while they are created, so they are made together.
  const std::string domain = "all:" + atb_ops::hccl_cpu::newRootToken();
  std::vector<std::unique_ptr<CpuComm>> made(ndev);
  std::vector<std::string> errors(ndev);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < ndev; ++r) {
    threads.emplace_back([&, r] {
      try {
        made[r] = atb_ops::hccl_cpu::joinThreads(domain, r, ndev);
      } catch (const c10::Error& e) {
        errors[r] = e.what_without_backtrace();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (uint32_t r = 0; r < ndev; ++r) {
    if (!errors[r].empty()) {
      return fail(HCCL_E_INTERNAL, "HcclCommInitAll: rank " + std::to_string(r) + ": " + errors[r]);
    }
  }
  for (uint32_t r = 0; r < ndev; ++r) comms[r] = atb_ops::hccl_cpu::registerComm(std::move(made[r]));
  return HCCL_SUCCESS;
}

HcclResult HcclCommDestroy(HcclComm comm) {
  if (comm == nullptr) return fail(HCCL_E_PTR, "HcclCommDestroy: the HcclComm is null");
  if (!atb_ops::hccl_cpu::releaseComm(comm)) {
    return fail(HCCL_E_PARA, "HcclCommDestroy: HcclComm " + handleText(comm) +
                                 " is not a live communicator (already destroyed, or not made by HcclCommInit*)");
  }
  return HCCL_SUCCESS;
}

HcclResult HcclGetRankSize(HcclComm comm, uint32_t* rankSize) {
  HCCL_CPU_FIND_COMM(comm);
  if (rankSize == nullptr) return fail(HCCL_E_PTR, "HcclGetRankSize: rankSize is null");
  *rankSize = live->size;
  return HCCL_SUCCESS;
}

HcclResult HcclGetRankId(HcclComm comm, uint32_t* rank) {
  HCCL_CPU_FIND_COMM(comm);
  if (rank == nullptr) return fail(HCCL_E_PTR, "HcclGetRankId: rank is null");
  *rank = live->rank;
  return HCCL_SUCCESS;
}

HcclResult HcclGetCommName(HcclComm comm, char* commName) {
  HCCL_CPU_FIND_COMM(comm);
  if (commName == nullptr) return fail(HCCL_E_PTR, "HcclGetCommName: commName is null");
  const std::string& name = live->name;
  const size_t n = std::min<size_t>(name.size(), COMM_NAME_MAX_LENGTH - 1);
  std::memcpy(commName, name.data(), n);
  commName[n] = '\0';
  return HCCL_SUCCESS;
}

HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult* asyncError) {
  HCCL_CPU_FIND_COMM(comm);
  if (asyncError == nullptr) return fail(HCCL_E_PTR, "HcclGetCommAsyncError: asyncError is null");
  // Calls complete synchronously: a fault was returned by its call; a communicator broken by one stays so.
  *asyncError = live->comm->failed() ? HCCL_E_REMOTE : HCCL_SUCCESS;
  return HCCL_SUCCESS;
}

const char* HcclGetErrorString(HcclResult code) {
  static const char* kNames[] = {"success",
                                 "parameter error",
                                 "empty pointer",
                                 "memory error",
                                 "internal error",
                                 "not supported",
                                 "not found",
                                 "unavailable",
                                 "system call error",
                                 "timeout",
                                 "open file failure",
                                 "tcp connect failure",
                                 "roce connect failure",
                                 "tcp transfer failure",
                                 "roce transfer failure",
                                 "runtime error",
                                 "driver error",
                                 "profiling error",
                                 "cce error",
                                 "network error",
                                 "try again",
                                 "remote error",
                                 "suspending",
                                 "retry failure",
                                 "out of memory"};
  const int c = static_cast<int>(code);
  if (c >= 0 && c < static_cast<int>(sizeof(kNames) / sizeof(kNames[0]))) return kNames[c];
  return "unknown HcclResult";
}

HcclResult HcclAllReduce(void* sendBuf, void* recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                         HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  return guarded([&] {
    at::Tensor out = typed(recvBuf, count, dataType);
    live->comm->allreduce(typed(sendBuf, count, dataType), out, reduceOpOf(op));
  });
}

HcclResult HcclBroadcast(void* buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
                         aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  if (root >= live->size) return fail(HCCL_E_PARA, "HcclBroadcast: root " + std::to_string(root));
  return guarded([&] {
    at::Tensor t = bytes(buf, count, dataType);
    live->comm->broadcast(t, static_cast<int32_t>(root));
  });
}

HcclResult HcclReduceScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, HcclDataType dataType, HcclReduceOp op,
                             HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  return guarded([&] {
    const uint64_t n = live->size;
    at::Tensor out = typed(recvBuf, recvCount, dataType);
    live->comm->reduceScatter(typed(sendBuf, recvCount * n, dataType), out, reduceOpOf(op));
  });
}

HcclResult HcclReduceScatterV(void* sendBuf, const void* sendCounts, const void* sendDispls, void* recvBuf,
                              uint64_t recvCount, HcclDataType dataType, HcclReduceOp op, HcclComm comm,
                              aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  if (sendCounts == nullptr || sendDispls == nullptr) return fail(HCCL_E_PTR, "HcclReduceScatterV: null counts");
  return guarded([&] {
    const CpuComm& c = *live;
    atb_ops::VLayout layout{countsOf(sendCounts, c.size), countsOf(sendDispls, c.size)};
    clearEmptyDispls(layout.counts, layout.displs);
    const int64_t sendNumel = extent(layout.counts, layout.displs);
    atb_ops::validateVLayout(layout, c.size, sendNumel, false, "sendCounts", "sendDispls");
    ATB_CHECK(layout.counts[c.rank] == static_cast<int64_t>(recvCount), ERROR_INVALID_PARAM, "recvCount ", recvCount,
              " differs from sendCounts[", c.rank, "]=", layout.counts[c.rank]);
    at::Tensor out = typed(recvBuf, recvCount, dataType);
    c.comm->reduceScatterV(typed(sendBuf, static_cast<uint64_t>(sendNumel), dataType), layout, out, reduceOpOf(op));
  });
}

HcclResult HcclScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, HcclDataType dataType, uint32_t root,
                       HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  if (root >= live->size) return fail(HCCL_E_PARA, "HcclScatter: root " + std::to_string(root));
  return guarded([&] {
    const CpuComm& c = *live;
    const int64_t chunk = static_cast<int64_t>(recvCount) * sizeOf(dataType);
    const int32_t n = static_cast<int32_t>(c.size);
    atb_ops::AllToAllVLayout l{std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0),
                               std::vector<int64_t>(n, 0)};
    l.recvCounts[root] = chunk;
    if (c.rank == root) {
      for (int32_t j = 0; j < n; ++j) {
        l.sendCounts[j] = chunk;
        l.sdispls[j] = j * chunk;
      }
    }
    at::Tensor send = c.rank == root ? bytes(sendBuf, recvCount * c.size, dataType) : bytes(nullptr, 0, dataType);
    at::Tensor out = bytes(recvBuf, recvCount, dataType);
    c.comm->alltoallv(send, l, out);
  });
}

HcclResult HcclAllGather(void* sendBuf, void* recvBuf, uint64_t sendCount, HcclDataType dataType, HcclComm comm,
                         aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  return guarded([&] {
    at::Tensor out = bytes(recvBuf, sendCount * live->size, dataType);
    live->comm->allgather(bytes(sendBuf, sendCount, dataType), out);
  });
}

HcclResult HcclAllGatherV(void* sendBuf, uint64_t sendCount, void* recvBuf, const void* recvCounts,
                          const void* recvDispls, HcclDataType dataType, HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  if (recvCounts == nullptr || recvDispls == nullptr) return fail(HCCL_E_PTR, "HcclAllGatherV: null counts");
  return guarded([&] {
    const CpuComm& c = *live;
    const int64_t es = sizeOf(dataType);
    atb_ops::VLayout layout{countsOf(recvCounts, c.size), countsOf(recvDispls, c.size)};
    clearEmptyDispls(layout.counts, layout.displs);
    const int64_t recvNumel = extent(layout.counts, layout.displs);
    atb_ops::validateVLayout(layout, c.size, recvNumel, true, "recvCounts", "recvDispls");
    ATB_CHECK(layout.counts[c.rank] == static_cast<int64_t>(sendCount), ERROR_INVALID_PARAM, "sendCount ", sendCount,
              " differs from recvCounts[", c.rank, "]=", layout.counts[c.rank]);
    for (size_t i = 0; i < layout.counts.size(); ++i) {
      layout.counts[i] *= es;
      layout.displs[i] *= es;
    }
    at::Tensor out = bytes(recvBuf, static_cast<uint64_t>(recvNumel), dataType);
    c.comm->allgatherv(bytes(sendBuf, sendCount, dataType), layout, out);
  });
}

HcclResult HcclAlltoAllV(const void* sendBuf, const void* sendCounts, const void* sdispls, HcclDataType sendType,
                         const void* recvBuf, const void* recvCounts, const void* rdispls, HcclDataType recvType,
                         HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(sendType);
  if (sendType != recvType) return fail(HCCL_E_PARA, "HcclAlltoAllV: sendType and recvType differ");
  if (sendCounts == nullptr || sdispls == nullptr || recvCounts == nullptr || rdispls == nullptr) {
    return fail(HCCL_E_PTR, "HcclAlltoAllV: null counts");
  }
  return guarded([&] {
    const CpuComm& c = *live;
    atb_ops::AllToAllVLayout l{countsOf(sendCounts, c.size), countsOf(sdispls, c.size), countsOf(recvCounts, c.size),
                               countsOf(rdispls, c.size)};
    clearEmptyDispls(l.sendCounts, l.sdispls);
    clearEmptyDispls(l.recvCounts, l.rdispls);
    const int64_t sendNumel = extent(l.sendCounts, l.sdispls);
    const int64_t recvNumel = extent(l.recvCounts, l.rdispls);
    atb_ops::validateLayout(l, c.size, sendNumel, recvNumel);
    // Moved as bytes, so every HCCL type travels.
    const int64_t es = sizeOf(sendType);
    for (auto* v : {&l.sendCounts, &l.sdispls, &l.recvCounts, &l.rdispls}) {
      for (auto& x : *v) x *= es;
    }
    at::Tensor out = bytes(recvBuf, static_cast<uint64_t>(recvNumel), sendType);
    c.comm->alltoallv(bytes(sendBuf, static_cast<uint64_t>(sendNumel), sendType), l, out);
  });
}

// AlltoAllV with every rank's counts in one matrix: row i is what rank i sends to each rank, packed in rank order in
// its send buffer; this rank receives column `rank`, packed in source order.
HcclResult HcclAlltoAllVC(const void* sendBuf, const void* sendCountMatrix, HcclDataType sendType, const void* recvBuf,
                          HcclDataType recvType, HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(sendType);
  if (sendType != recvType) return fail(HCCL_E_PARA, "HcclAlltoAllVC: sendType and recvType differ");
  if (sendCountMatrix == nullptr) return fail(HCCL_E_PTR, "HcclAlltoAllVC: sendCountMatrix is null");
  return guarded([&] {
    const CpuComm& c = *live;
    const uint32_t n = c.size;
    const std::vector<int64_t> matrix = countsOf(sendCountMatrix, n * n);
    atb_ops::AllToAllVLayout l;
    int64_t sent = 0;
    int64_t received = 0;
    for (uint32_t j = 0; j < n; ++j) {
      l.sendCounts.push_back(matrix[c.rank * n + j]);
      l.sdispls.push_back(sent);
      sent += l.sendCounts.back();
      l.recvCounts.push_back(matrix[j * n + c.rank]);
      l.rdispls.push_back(received);
      received += l.recvCounts.back();
    }
    atb_ops::validateLayout(l, static_cast<int32_t>(n), sent, received);
    const int64_t es = sizeOf(sendType);
    for (auto* v : {&l.sendCounts, &l.sdispls, &l.recvCounts, &l.rdispls}) {
      for (auto& x : *v) x *= es;
    }
    at::Tensor out = bytes(recvBuf, static_cast<uint64_t>(received), sendType);
    c.comm->alltoallv(bytes(sendBuf, static_cast<uint64_t>(sent), sendType), l, out);
  });
}

HcclResult HcclAlltoAll(const void* sendBuf, uint64_t sendCount, HcclDataType sendType, const void* recvBuf,
                        uint64_t recvCount, HcclDataType recvType, HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(sendType);
  if (sendType != recvType || sendCount != recvCount) {
    return fail(HCCL_E_PARA, "HcclAlltoAll: send and receive counts or types differ");
  }
  return guarded([&] {
    const CpuComm& c = *live;
    const int64_t chunk = static_cast<int64_t>(sendCount) * sizeOf(sendType);
    at::Tensor out = bytes(recvBuf, recvCount * c.size, recvType);
    c.comm->alltoallv(bytes(sendBuf, sendCount * c.size, sendType), atb_ops::equalSplitLayout(c.size, chunk), out);
  });
}

HcclResult HcclReduce(void* sendBuf, void* recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                      uint32_t root, HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  if (root >= live->size) return fail(HCCL_E_PARA, "HcclReduce: root " + std::to_string(root));
  return guarded([&] {
    const CpuComm& c = *live;
    const at::Tensor send = typed(sendBuf, count, dataType);
    at::Tensor result = at::empty_like(send);
    c.comm->allreduce(send, result, reduceOpOf(op));
    if (c.rank == root) typed(recvBuf, count, dataType).copy_(result);
  });
}

HcclResult HcclSend(void* sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank, HcclComm comm,
                    aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  if (destRank >= live->size) return fail(HCCL_E_PARA, "HcclSend: destRank " + std::to_string(destRank));
  return guarded([&] { live->comm->send(payload(sendBuf, count, dataType), static_cast<int32_t>(destRank)); });
}

HcclResult HcclRecv(void* recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank, HcclComm comm,
                    aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  HCCL_CPU_CHECK_TYPE(dataType);
  if (srcRank >= live->size) return fail(HCCL_E_PARA, "HcclRecv: srcRank " + std::to_string(srcRank));
  return guarded([&] {
    at::Tensor t = payload(recvBuf, count, dataType);
    live->comm->recv(t, static_cast<int32_t>(srcRank));
  });
}

HcclResult HcclBatchSendRecv(HcclSendRecvItem* sendRecvInfo, uint32_t itemNum, HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  if (sendRecvInfo == nullptr && itemNum > 0) return fail(HCCL_E_PTR, "HcclBatchSendRecv: null item list");
  std::vector<atb_ops::P2pOp> ops;
  for (uint32_t i = 0; i < itemNum; ++i) {
    const HcclSendRecvItem& it = sendRecvInfo[i];
    HCCL_CPU_CHECK_TYPE(it.dataType);
    if (it.remoteRank >= live->size || it.remoteRank == live->rank) {
      return fail(HCCL_E_PARA,
                  "HcclBatchSendRecv: item " + std::to_string(i) + " names rank " + std::to_string(it.remoteRank));
    }
    ops.push_back(atb_ops::P2pOp{it.sendRecvType == HCCL_SEND, payload(it.buf, it.count, it.dataType),
                                 static_cast<int32_t>(it.remoteRank)});
  }
  return guarded([&] { live->comm->sendRecv(ops); });
}

HcclResult HcclBarrier(HcclComm comm, aclrtStream /*stream*/) {
  HCCL_CPU_FIND_COMM(comm);
  return guarded([&] { live->comm->barrier(); });
}

}  // extern "C"
