// What one collective call is, in 64 bytes every rank can compare before any data moves: the surface call
// (the exact ATB operator or framework call), the communicator method, dtype, reduce op, root, the sizes
// every rank must agree on (bytes, a digest of a shared layout) and the call's number on its communicator.
// shm keeps it in each rank's post (one cache line); gloo all-gathers it; a difference is one error, the same
// on every rank, naming the first field that differs and each rank's value.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/layout.h"
#include "core/reduce.h"

namespace atb_ops {

enum class Collective : uint8_t {
  kNone = 0,
  kAlltoallv,
  kAllgather,
  kAllgatherv,
  kAllreduce,
  kReduceScatter,
  kReduceScatterV,
  kBroadcast,
  kBarrier,
};
const char* collectiveName(Collective c);

constexpr size_t kOperationChars = 32;

struct CallSignature {
  char operation[kOperationChars];  // NUL-padded; "" when no surface labelled the call
  uint32_t seq = 0;                 // collectives issued on this communicator, this one included
  uint8_t collective = 0;           // Collective
  int8_t dtype = -1;                // c10::ScalarType; -1: none (barrier)
  int8_t reduceOp = -1;             // ReduceOp; -1: not a reduction
  uint8_t reserved = 0;
  int32_t root = -1;     // broadcast's (and a reduce's) root; -1 otherwise
  int32_t elemSize = 0;  // of dtype, for messages in elements
  uint64_t bytes = 0;    // bytes every rank passes alike (0 where they may differ: alltoallv)
  uint64_t layout = 0;   // digest of a layout every rank passes alike (allgatherv, reduce_scatterv); 0: none
};
static_assert(sizeof(CallSignature) == 64, "one cache line in shm's posts");

// A signature for `collective` on tensors of `dtype`; the surface label comes from the calling thread.
CallSignature makeSignature(Collective collective, uint32_t seq, c10::ScalarType dtype, uint64_t bytes);
// The digest of a layout every rank must pass identically.
uint64_t layoutDigest(const VLayout& layout);
// The digest of the fields checkSignatures compares, the call number aside: equal for calls alike on any rank.
uint64_t signatureDigest(const CallSignature& sig);

// The first field on which the ranks' signatures differ, as one message naming each rank's value; empty when
// every rank called the same thing. `sig(r)` is rank r's signature; `what` prefixes the message.
std::string signatureMismatch(int32_t rankSize, const std::function<const CallSignature&(int32_t)>& sig,
                              const std::string& what);
// Raises the mismatch (if any) with the status of its field: ERROR_INVALID_TENSOR_DTYPE for dtypes,
// ERROR_INVALID_TENSOR_SIZE for sizes, ERROR_INVALID_PARAM otherwise.
void checkSignatures(int32_t rankSize, const std::function<const CallSignature&(int32_t)>& sig,
                     const std::string& what);

// The header of a call in a comparison that is an exchange of its own (gloo's check, the two levels'): the
// signature, then alltoallv's count to and from each rank as int64 (zeros for other calls). Fixed for a rank count,
// so ranks that called different things still exchange matching messages.
int64_t callHeaderBytes(int32_t rankSize);
// Writes it at `out` (callHeaderBytes bytes); `counts`: alltoallv's layout, else null.
void writeCallHeader(const CallSignature& sig, const AllToAllVLayout* counts, int32_t rankSize, char* out);
// Entry i of a header's counts: i < rankSize its send count to rank i, else its receive count from i - rankSize.
int64_t headerCount(const char* header, int32_t i);
// Every rank's header (`headerOf(r)`) compared as checkSignatures does, and with `withCounts` alltoallv's count
// matrix (checkCountMatrix): the same error on every rank that holds the same headers.
void checkCallHeaders(int32_t rankSize, const std::function<const char*(int32_t)>& headerOf, bool withCounts,
                      const std::string& what);

// Labels the collectives this thread issues while it lives with the surface call that issues them ("an ATB
// operator name, "all_to_all_v", "HcclAllReduce"). Nested labels keep the outermost: the ATB operator that
// calls HCCL's API stays the operator.
class CallLabel {
 public:
  explicit CallLabel(const char* label);
  explicit CallLabel(const std::string& label) : CallLabel(label.c_str()) {}
  ~CallLabel();
  CallLabel(const CallLabel&) = delete;
  CallLabel& operator=(const CallLabel&) = delete;

 private:
  bool owns_;
};
// Labels the collectives this thread issues while it lives with `label`, in place of any outer label, and puts the
// outer one back after: for the exchange in which a communicator made of several compares its own calls (surface
// label included) over its parts, where ranks that called different surfaces must still match.
class ReplacedCallLabel {
 public:
  explicit ReplacedCallLabel(const char* label);
  ~ReplacedCallLabel();
  ReplacedCallLabel(const ReplacedCallLabel&) = delete;
  ReplacedCallLabel& operator=(const ReplacedCallLabel&) = delete;

 private:
  const char* outer_;
};
// The label of the calling thread ("" when none).
const char* currentCallLabel();

}  // namespace atb_ops
