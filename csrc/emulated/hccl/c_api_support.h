// What every entry point of HCCL's C API on CPU shares: this thread's record of its last failure, atb_ops'
// exceptions turned into HCCL's codes, HCCL's (pointer, count, type) seen as tensors, and the checks of a handle
// and a type that start each call. The entry points: hccl_lifecycle.cpp (roots, communicators, queries) and
// hccl_collectives.cpp (the collectives and point-to-point calls).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <hccl/hccl.h>

#include "core/reduce.h"
#include "core/status.h"
#include "emulated/hccl/comm_registry.h"
#include "emulated/hccl/cpu_comm.h"

namespace atb_ops::hccl_cpu {

// Records `why` (and the atb_ops status behind it) as this thread's last failure; returns `code`.
HcclResult fail(HcclResult code, const std::string& why, atb_ops::Status status = atb_ops::Status::ERROR_HCCL_FAIL);
void clearLastError();
const std::string& lastErrorText();
int32_t lastStatusCode();  // an atb_ops::Status; 0 before any failure
HcclResult toHcclResult(atb_ops::Status s);

// A null buffer where data is due: HCCL's own checks of sendBuf / recvBuf answer HCCL_E_PTR.
struct NullBuffer : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
// A data type or reduce op HCCL does not support for the call: HCCL's checks answer HCCL_E_NOT_SUPPORT.
struct NotSupported : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Runs `body` and turns what it throws into an HcclResult, keeping the message.
template <typename F>
HcclResult guarded(F&& body) {
  try {
    body();
    clearLastError();
    return HCCL_SUCCESS;
  } catch (const NullBuffer& e) {
    return fail(HCCL_E_PTR, e.what(), atb_ops::Status::ERROR_INVALID_PARAM);
  } catch (const NotSupported& e) {
    return fail(HCCL_E_NOT_SUPPORT, e.what(), atb_ops::Status::ERROR_INVALID_PARAM);
  } catch (const atb_ops::StatusError& e) {
    return fail(toHcclResult(e.status()), e.what_without_backtrace(), e.status());
  } catch (const c10::Error& e) {
    return fail(HCCL_E_INTERNAL, e.what_without_backtrace());
  } catch (const std::exception& e) {
    return fail(HCCL_E_INTERNAL, e.what());
  }
}

std::string handleText(HcclComm comm);
// The torch dtype data of `type` is stored as; false for types torch cannot reduce (unsigned 16/32/64-bit).
bool scalarTypeOf(HcclDataType type, c10::ScalarType* out);
int64_t sizeOf(HcclDataType type);  // bytes per element; 0 for an unknown type
// The elements of payload()'s tensor per element of `type`: 1 where torch has the type, else its bytes (so counts
// and displacements scale alike, and a size that differs across ranks is named in the caller's elements).
int64_t unitOf(HcclDataType type);
// `count` elements of `type` at `ptr` as a tensor (no copy): typed when the collective computes (raises for a
// type torch cannot reduce), as bytes when it only moves data; payload: typed where torch has the type. A null
// `ptr` with `count` > 0 throws NullBuffer naming `what` (the argument: "sendBuf", "recvBuf", ...).
at::Tensor typed(const void* ptr, uint64_t count, HcclDataType type, const char* what);
at::Tensor bytes(const void* ptr, uint64_t count, HcclDataType type, const char* what);
at::Tensor payload(const void* ptr, uint64_t count, HcclDataType type, const char* what);
atb_ops::ReduceOp reduceOpOf(HcclReduceOp op);
// HCCL's uint64 counts or displacements as int64 (each checked).
std::vector<int64_t> countsOf(const void* values, uint32_t n);
// HCCL never touches a region of count 0, wherever its displacement points: such displacements become 0.
void clearEmptyDispls(const std::vector<int64_t>& counts, std::vector<int64_t>& displs);
// One past the last element any non-empty region reaches.
int64_t extent(const std::vector<int64_t>& counts, const std::vector<int64_t>& displs);

}  // namespace atb_ops::hccl_cpu

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

// An unknown data type or reduce op: HCCL_E_NOT_SUPPORT, as HCCL's own HcomCheckDataType / HcomCheckReductionOp.
#define HCCL_CPU_CHECK_TYPE(type)                                                                                 \
  if (sizeOf(type) == 0)                                                                                          \
    return fail(                                                                                                  \
        HCCL_E_NOT_SUPPORT,                                                                                       \
        std::string(__func__) + ": HcclDataType " + std::to_string(static_cast<int>(type)) + " is not supported", \
        atb_ops::Status::ERROR_INVALID_PARAM);

#define HCCL_CPU_CHECK_OP(op)                                                                                    \
  if ((op) != HCCL_REDUCE_SUM && (op) != HCCL_REDUCE_PROD && (op) != HCCL_REDUCE_MAX && (op) != HCCL_REDUCE_MIN) \
    return fail(HCCL_E_NOT_SUPPORT,                                                                              \
                std::string(__func__) + ": HcclReduceOp " + std::to_string(static_cast<int>(op)) +               \
                    " is not supported (sum, prod, max or min)",                                                 \
                atb_ops::Status::ERROR_INVALID_PARAM);
