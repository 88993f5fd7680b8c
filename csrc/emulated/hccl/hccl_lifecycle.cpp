// HCCL's C API (include/hccl/hccl.h: HCCL's signatures and types) implemented over atb_ops' CPU transport, so
// the HCCL backend, ATB's own tests and users' C/C++ programs run with real data on CPU ranks. CPU pointers play
// device memory; a stream argument is accepted and every call completes on the calling thread before it
// returns. Bad arguments and dead handles return HCCL's own codes (HCCL_E_PTR, HCCL_E_PARA, ...); a fault's
// full text is kept per thread (atbOpsHcclCpuLastError). This is not Huawei's library: it is installed as
// $ASCEND_HOME_PATH/lib64/libhccl.so of atb_ops' CANN-like layout.
// This file: root info, communicators' creation and destruction, queries and error strings.
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <hccl/hccl.h>

#include "emulated/hccl/c_api_support.h"

using namespace atb_ops::hccl_cpu;  // NOLINT(google-build-using-namespace): the helpers every entry point uses

extern "C" {

// Not part of HCCL: the full text of this thread's last failure (HcclGetErrorString only names codes).
__attribute__((visibility("default"))) const char* atbOpsHcclCpuLastError() {
  return lastErrorText().c_str();
}

// Not part of HCCL: the atb_ops status of this thread's last failure (a peer that released the communicator is
// told apart from one that died, which HCCL's codes cannot say).
__attribute__((visibility("default"))) int32_t atbOpsHcclCpuLastStatus() {
  return lastStatusCode();
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
  // HCCL's order and codes: ndev first, then the two pointers.
  if (ndev == 0) return fail(HCCL_E_PARA, "HcclCommInitAll: ndev is 0");
  if (comms == nullptr) return fail(HCCL_E_PTR, "HcclCommInitAll: comms is null");
  if (devices == nullptr) return fail(HCCL_E_PTR, "HcclCommInitAll: devices is null");
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

}  // extern "C"
