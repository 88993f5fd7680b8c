// The alltoallv layout (counts and displacements) and the ONE function that validates it.
// Every operation, every backend and the Python API call validateLayout before any communication.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace atb_ops {

// All values are in elements of the flattened tensors, as in ATB and MPI_Alltoallv.
struct AllToAllVLayout {
  std::vector<int64_t> sendCounts;  // [rankSize] elements this rank sends to rank i
  std::vector<int64_t> sdispls;     // [rankSize] offset in the input of what goes to rank i
  std::vector<int64_t> recvCounts;  // [rankSize] elements this rank receives from rank i
  std::vector<int64_t> rdispls;     // [rankSize] offset in the output of what comes from rank i

  int64_t totalRecv() const;
  int64_t totalSend() const;
};

// Checks, raising ATB-style errors that name the argument and the values:
//  - all four arrays have rankSize entries, counts >= 0, displacements >= 0;
//  - send regions [sdispls[i], sdispls[i]+sendCounts[i]) lie inside the input of sendNumel
//    elements (they may overlap);
//  - receive regions lie inside the output of recvCapacity elements and are disjoint.
// recvCapacity < 0 means "exactly sum(recvCounts)", the ATB output size.
// Returns sum(recvCounts).
int64_t validateLayout(const AllToAllVLayout& layout, int64_t rankSize, int64_t sendNumel, int64_t recvCapacity = -1);

// Raises checkCountMatrix's error: rank i sends `sent` elements to rank j, which expects `expected`.
[[noreturn]] void countMismatch(const char* what, int32_t i, int32_t j, int64_t sent, int64_t expected);

// The cross-rank check: sent(i, j) is what rank i sends to rank j, expected(j, i) what rank j expects
// from rank i, both in `unit`s (the error divides by `unit` to name elements: shm compares bytes, so
// nothing is divided on the way). Every rank that sees the same matrix raises the same error, naming i, j
// and both counts, so ranks stay in step instead of some moving data and some not. A template: it runs
// on every alltoallv, n * n times.
template <typename Sent, typename Expected>
void checkCountMatrix(int32_t rankSize, const Sent& sent, const Expected& expected, const char* what,
                      int64_t unit = 1) {
  for (int32_t i = 0; i < rankSize; ++i) {
    for (int32_t j = 0; j < rankSize; ++j) {
      const int64_t s = sent(i, j);
      const int64_t e = expected(j, i);
      if (s != e) countMismatch(what, i, j, s / unit, e / unit);
    }
  }
}

// Equal splits: `chunk` elements to and from every rank, packed in rank order (AllToAll).
AllToAllVLayout equalSplitLayout(int64_t rankSize, int64_t chunk);

// AllGather as alltoallv: every rank sends its whole input to everyone; output in rank order.
AllToAllVLayout allGatherLayout(int64_t rankSize, int64_t numel);

// Parses set_varaintpack_param's JSON: {"sendCounts": [...], "sdispls": [...], "recvCounts": [...],
// "rdispls": [...]}; all four keys required, integers only, unknown keys rejected.
AllToAllVLayout parseLayoutJson(const std::string& json);

// One side's per-rank counts and displacements, in elements: AllGatherV's receive side, ReduceScatterV's
// send side.
struct VLayout {
  std::vector<int64_t> counts;  // [rankSize]
  std::vector<int64_t> displs;  // [rankSize]
  int64_t total() const;
};

// A V collective as one rank runs it: the layout, and this rank's own count (AllGatherV's sendCount,
// ReduceScatterV's recvCount): what the V operators' plans hand to their runs.
struct VCall {
  VLayout layout;
  int64_t count = 0;
};

// The one check of a VLayout: both arrays have rankSize entries, values >= 0, every region
// [displs[i], displs[i]+counts[i]) inside `capacity` elements and, when `disjoint` (regions written by
// different ranks), no two regions overlap. Names the arrays as `countsName` / `displsName`.
void validateVLayout(const VLayout& layout, int64_t rankSize, int64_t capacity, bool disjoint, const char* countsName,
                     const char* displsName);

// Rank lists in messages: "1, 3" or, for long runs, "1-9999 (9999 ranks)".
std::string formatRanks(const std::vector<int64_t>& ranks);

// "ranks 0-1 on 'h0', rank 2 on 'h1'": the ranks grouped by their label (labelOfRank[r]), groups in order of
// first appearance; ranks whose label is empty are left out.
std::string formatRanksByLabel(const std::vector<std::string>& labelOfRank);

}  // namespace atb_ops
