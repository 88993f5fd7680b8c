#include "comm/call_signature.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include "comm/bootstrap/job_scope.h"
#include "core/status.h"

namespace atb_ops {
namespace {

thread_local const char* tlsLabel = nullptr;

std::string operationOf(const CallSignature& s) {
  const size_t n = strnlen(s.operation, kOperationChars);
  return n == 0 ? std::string("(no operator)") : std::string(s.operation, n);
}

// One field of the signature: how to read it from a rank and how to print it.
struct Field {
  const char* name;
  Status status;
  std::function<std::string(const CallSignature&)> text;
};

std::string dtypeText(const CallSignature& s) {
  return s.dtype < 0 ? std::string("none") : std::string(c10::toString(static_cast<c10::ScalarType>(s.dtype)));
}

std::string sizeText(const CallSignature& s) {
  if (s.elemSize <= 0) return std::to_string(s.bytes) + " bytes";
  return std::to_string(s.bytes / static_cast<uint64_t>(s.elemSize)) + " elements";
}

const std::vector<Field>& fields() {
  static const std::vector<Field> f{
      {"call number", Status::ERROR_INVALID_PARAM, [](const CallSignature& s) { return "#" + std::to_string(s.seq); }},
      {"operation", Status::ERROR_INVALID_PARAM, operationOf},
      {"collective", Status::ERROR_INVALID_PARAM,
       [](const CallSignature& s) { return std::string(collectiveName(static_cast<Collective>(s.collective))); }},
      {"dtype", Status::ERROR_INVALID_TENSOR_DTYPE, dtypeText},
      {"reduce op", Status::ERROR_INVALID_PARAM,
       [](const CallSignature& s) {
         return s.reduceOp < 0 ? std::string("none") : std::string(reduceOpName(static_cast<ReduceOp>(s.reduceOp)));
       }},
      {"root", Status::ERROR_INVALID_PARAM, [](const CallSignature& s) { return std::to_string(s.root); }},
      {"size", Status::ERROR_INVALID_TENSOR_SIZE, sizeText},
      {"layout (counts and displacements)", Status::ERROR_INVALID_PARAM,
       [](const CallSignature& s) {
         char hex[32];
         std::snprintf(hex, sizeof(hex), "digest %016llx", static_cast<unsigned long long>(s.layout));
         return std::string(hex);
       }},
  };
  return f;
}

// "rank 0 AllGatherOperation, ranks 1-3 AllToAllOperation": every rank's value, ranks with one value grouped.
std::string perRank(int32_t n, const std::function<const CallSignature&(int32_t)>& sig, const Field& field) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> groups;
  for (int32_t r = 0; r < n; ++r) {
    const std::string v = field.text(sig(r));
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == v; });
    if (it == groups.end()) {
      groups.push_back({v, {r}});
    } else {
      it->second.push_back(r);
    }
  }
  std::string out;
  for (const auto& [value, ranks] : groups) {
    if (!out.empty()) out += "; ";
    out += (ranks.size() == 1 ? "rank " : "ranks ") + formatRanks(ranks) + ": " + value;
  }
  return out;
}

// The first field whose value differs between ranks, or null.
const Field* firstDifference(int32_t n, const std::function<const CallSignature&(int32_t)>& sig) {
  const CallSignature& first = sig(0);
  const auto same = [](const CallSignature& a, const CallSignature& b, size_t field) {
    switch (field) {
      case 0: return a.seq == b.seq;
      case 1: return std::memcmp(a.operation, b.operation, kOperationChars) == 0;
      case 2: return a.collective == b.collective;
      case 3: return a.dtype == b.dtype;
      case 4: return a.reduceOp == b.reduceOp;
      case 5: return a.root == b.root;
      case 6: return a.bytes == b.bytes;
      default: return a.layout == b.layout;
    }
  };
  for (size_t f = 0; f < fields().size(); ++f) {
    for (int32_t r = 1; r < n; ++r) {
      if (!same(first, sig(r), f)) return &fields()[f];
    }
  }
  return nullptr;
}

}  // namespace

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kNone: return "none";
    case Collective::kAlltoallv: return "alltoallv";
    case Collective::kAllgather: return "allgather";
    case Collective::kAllgatherv: return "allgatherv";
    case Collective::kAllreduce: return "allreduce";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kReduceScatterV: return "reduce_scatterv";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kBarrier: return "barrier";
  }
  return "unknown";
}

CallSignature makeSignature(Collective collective, uint32_t seq, c10::ScalarType dtype, uint64_t bytes) {
  CallSignature s;
  std::memset(s.operation, 0, kOperationChars);
  if (tlsLabel != nullptr) {
    const size_t n = std::strlen(tlsLabel);
    if (n < kOperationChars) {
      std::memcpy(s.operation, tlsLabel, n);
    } else {
      // Too long to keep whole: its head and a digest of all of it, so two labels that share the first 31
      // characters still differ ("torch.distributed.all_gather_in~1f2e3d4c").
      constexpr size_t kHead = kOperationChars - 10;
      std::memcpy(s.operation, tlsLabel, kHead);
      std::snprintf(s.operation + kHead, 10, "~%08x", static_cast<unsigned>(fnv1a(tlsLabel) & 0xffffffffu));
    }
  }
  s.seq = seq;
  s.collective = static_cast<uint8_t>(collective);
  if (dtype != c10::ScalarType::Undefined) {
    s.dtype = static_cast<int8_t>(dtype);
    s.elemSize = static_cast<int32_t>(c10::elementSize(dtype));
  }
  s.bytes = bytes;
  return s;
}

uint64_t layoutDigest(const VLayout& layout) {
  std::string bytes;
  for (const auto* v : {&layout.counts, &layout.displs}) {
    bytes.append(reinterpret_cast<const char*>(v->data()), v->size() * sizeof(int64_t));
    bytes.push_back('|');
  }
  return fnv1a(bytes);
}

uint64_t signatureDigest(const CallSignature& sig) {
  std::string bytes(sig.operation, sizeof(sig.operation));
  const auto add = [&bytes](const auto& field) { bytes.append(reinterpret_cast<const char*>(&field), sizeof(field)); };
  add(sig.collective);
  add(sig.dtype);
  add(sig.reduceOp);
  add(sig.root);
  add(sig.bytes);
  add(sig.layout);
  return fnv1a(bytes);
}

std::string signatureMismatch(int32_t n, const std::function<const CallSignature&(int32_t)>& sig,
                              const std::string& what) {
  const Field* f = firstDifference(n, sig);
  if (f == nullptr) return {};
  return what + ": the ranks called different things (" + f->name + " differs: " + perRank(n, sig, *f) +
         "); every rank must issue the same calls, with matching arguments, on one communicator in the same order";
}

void checkSignatures(int32_t n, const std::function<const CallSignature&(int32_t)>& sig, const std::string& what) {
  const Field* f = firstDifference(n, sig);
  if (f == nullptr) return;
  detail::raise(f->status, __func__, __FILE__, __LINE__, signatureMismatch(n, sig, what));
}

CallLabel::CallLabel(const char* label) : owns_(tlsLabel == nullptr) {
  if (owns_) tlsLabel = label;
}

CallLabel::~CallLabel() {
  if (owns_) tlsLabel = nullptr;
}

int64_t callHeaderBytes(int32_t rankSize) {
  return static_cast<int64_t>(sizeof(CallSignature) + 2 * static_cast<size_t>(rankSize) * sizeof(int64_t));
}

void writeCallHeader(const CallSignature& sig, const AllToAllVLayout* counts, int32_t rankSize, char* out) {
  std::memcpy(out, &sig, sizeof(CallSignature));
  char* sends = out + sizeof(CallSignature);
  char* recvs = sends + rankSize * sizeof(int64_t);
  if (counts != nullptr) {
    std::memcpy(sends, counts->sendCounts.data(), rankSize * sizeof(int64_t));
    std::memcpy(recvs, counts->recvCounts.data(), rankSize * sizeof(int64_t));
  } else {
    std::memset(sends, 0, 2 * rankSize * sizeof(int64_t));
  }
}

int64_t headerCount(const char* header, int32_t i) {
  int64_t v;
  std::memcpy(&v, header + sizeof(CallSignature) + i * sizeof(int64_t), sizeof(v));
  return v;
}

void checkCallHeaders(int32_t rankSize, const std::function<const char*(int32_t)>& headerOf, bool withCounts,
                      const std::string& what) {
  std::vector<CallSignature> sigs(static_cast<size_t>(rankSize));
  for (int32_t r = 0; r < rankSize; ++r) std::memcpy(&sigs[r], headerOf(r), sizeof(CallSignature));
  checkSignatures(rankSize, [&](int32_t r) -> const CallSignature& { return sigs[r]; }, what);
  if (withCounts) {
    checkCountMatrix(
        rankSize, [&](int32_t i, int32_t j) { return headerCount(headerOf(i), j); },
        [&](int32_t j, int32_t i) { return headerCount(headerOf(j), rankSize + i); }, what.c_str());
  }
}

ReplacedCallLabel::ReplacedCallLabel(const char* label) : outer_(tlsLabel) {
  tlsLabel = label;
}

ReplacedCallLabel::~ReplacedCallLabel() {
  tlsLabel = outer_;
}

const char* currentCallLabel() {
  return tlsLabel == nullptr ? "" : tlsLabel;
}

}  // namespace atb_ops
