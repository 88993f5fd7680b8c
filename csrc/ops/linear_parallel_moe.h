// The MoE types' token layout (ALLTOALLVC_ALL_GATHER_GMM dispatches tokens to their experts' ranks,
// GMM_REDUCE_SCATTER_ALLTOALLVC brings the results back), derived from ATB's globalTokensPerExpertMatrix.
//
// The facts it follows (ATB's MoE tests and lcoc runner):
//  - ranks are r = ep * tpSize + tp: TP groups are consecutive ranks, EP groups every tpSize-th rank;
//  - matrix [epSize, epSize * L] (L = localExpertNums): row j holds how many tokens EP index j has for each
//    global expert; a rank's tokens are sorted by global expert (expert e = owner EP index e / L, local e % L);
//  - an expert owner holds its tokens expert-major: for each local expert l, for each source EP index j, for
//    each source TP index t (every TP member of the owner group holds all of them: the TP all-gather), the
//    rows of block (l, j, t), which has matrix[j][owner * L + l] rows;
//  - the owner keeps at most `limit` rows (maxOutputSize), cut in that order: the blocks past the cut are
//    dropped, so what one source sends one owner is always a prefix of its rows for that owner's experts.
// Everything is in rows; the caller multiplies by its row's element count.
#pragma once

#include <cstdint>
#include <vector>

#include "core/layout.h"

namespace atb_ops {

struct MoeLayout {
  // Dispatch (type 5): this rank's tokens to every rank of the owner groups, rank-major at the receiver.
  // Combine (type 6) uses the same with send and receive swapped (see combineLayout).
  AllToAllVLayout dispatch;
  // Row of the rank-major receive buffer for each row of the owner's expert-major order (keptRows entries).
  std::vector<int64_t> expertMajorSource;
  // Expert-major row offsets of this rank's local experts: expertOffsets[l] .. expertOffsets[l + 1].
  std::vector<int64_t> expertOffsets;
  int64_t keptRows = 0;   // rows this rank holds as an owner, after the cut
  int64_t ownTokens = 0;  // this rank's own tokens: the sum of its EP index's matrix row
};

// `matrix` is row-major [ep, ep * localExperts], values >= 0 (checked by the caller, which names the input).
MoeLayout moeLayout(const std::vector<int64_t>& matrix, int32_t ep, int32_t tp, int32_t localExperts, int32_t rank,
                    int64_t limit);

// Combine's alltoallv, in rows: the owner sends its rows back rank-major (in the order the dispatch received
// them); a source receives each owner-group member's rows for its tokens at its own expert offsets, member
// t of the owner group into plane t (planes of `planeRows` rows; TP partial sums are added afterwards).
AllToAllVLayout combineLayout(const MoeLayout& l, int32_t tp, int64_t planeRows);

// Multiplies every count and displacement by `rowNumel` (rows -> elements).
AllToAllVLayout scaleLayout(const AllToAllVLayout& rows, int64_t rowNumel);

}  // namespace atb_ops
