#include "ops/linear_parallel_moe.h"

#include <algorithm>

namespace atb_ops {

MoeLayout moeLayout(const std::vector<int64_t>& matrix, int32_t ep, int32_t tp, int32_t localExperts, int32_t rank,
                    int64_t limit) {
  const int32_t n = ep * tp;
  const int64_t experts = int64_t{ep} * localExperts;
  const auto count = [&](int32_t j, int64_t expert) { return matrix[static_cast<size_t>(j * experts + expert)]; };

  // kept[g][(l * ep + j) * tp + t]: rows of block (l, j, t) that owner group g keeps, walking its blocks in
  // expert-major order until `limit` rows are taken.
  std::vector<std::vector<int64_t>> kept(static_cast<size_t>(ep));
  for (int32_t g = 0; g < ep; ++g) {
    auto& k = kept[static_cast<size_t>(g)];
    k.assign(static_cast<size_t>(localExperts * ep * tp), 0);
    int64_t taken = 0;
    for (int32_t l = 0; l < localExperts; ++l) {
      for (int32_t j = 0; j < ep; ++j) {
        for (int32_t t = 0; t < tp; ++t) {
          const int64_t rows = std::min(count(j, int64_t{g} * localExperts + l), limit - taken);
          k[static_cast<size_t>((l * ep + j) * tp + t)] = rows;
          taken += rows;
        }
      }
    }
  }
  const auto keptRows = [&](int32_t g, int32_t l, int32_t j, int32_t t) {
    return kept[static_cast<size_t>(g)][static_cast<size_t>((l * ep + j) * tp + t)];
  };

  const int32_t myEp = rank / tp;
  const int32_t myTp = rank % tp;
  MoeLayout out;
  // Where each global expert's tokens start among this rank's own (sorted by expert).
  std::vector<int64_t> expertStart(static_cast<size_t>(experts + 1), 0);
  for (int64_t e = 0; e < experts; ++e) expertStart[static_cast<size_t>(e + 1)] = expertStart[e] + count(myEp, e);
  out.ownTokens = expertStart.back();

  AllToAllVLayout& d = out.dispatch;
  d.sendCounts.assign(static_cast<size_t>(n), 0);
  d.sdispls.assign(static_cast<size_t>(n), 0);
  d.recvCounts.assign(static_cast<size_t>(n), 0);
  d.rdispls.assign(static_cast<size_t>(n), 0);
  int64_t received = 0;
  for (int32_t q = 0; q < n; ++q) {
    const int32_t g = q / tp;
    const int32_t t = q % tp;
    // To rank q (owner group g): a prefix of this rank's tokens for g's experts.
    int64_t send = 0;
    for (int32_t l = 0; l < localExperts; ++l) send += keptRows(g, l, myEp, myTp);
    d.sendCounts[q] = send;
    d.sdispls[q] = expertStart[static_cast<size_t>(int64_t{g} * localExperts)];
    // From rank q (source EP index g, TP index t): its prefix for this rank's experts, packed in rank order.
    int64_t recv = 0;
    for (int32_t l = 0; l < localExperts; ++l) recv += keptRows(myEp, l, g, t);
    d.recvCounts[q] = recv;
    d.rdispls[q] = received;
    received += recv;
  }
  out.keptRows = received;

  // Expert-major order over the rank-major receive buffer.
  out.expertMajorSource.reserve(static_cast<size_t>(received));
  out.expertOffsets.assign(static_cast<size_t>(localExperts + 1), 0);
  std::vector<int64_t> consumed(static_cast<size_t>(n), 0);  // rows of source q already placed
  for (int32_t l = 0; l < localExperts; ++l) {
    for (int32_t j = 0; j < ep; ++j) {
      for (int32_t t = 0; t < tp; ++t) {
        const int32_t q = j * tp + t;
        const int64_t rows = keptRows(myEp, l, j, t);
        const int64_t first = d.rdispls[q] + consumed[static_cast<size_t>(q)];
        for (int64_t i = 0; i < rows; ++i) out.expertMajorSource.push_back(first + i);
        consumed[static_cast<size_t>(q)] += rows;
      }
    }
    out.expertOffsets[static_cast<size_t>(l + 1)] = static_cast<int64_t>(out.expertMajorSource.size());
  }
  return out;
}

AllToAllVLayout combineLayout(const MoeLayout& l, int32_t tp, int64_t planeRows) {
  AllToAllVLayout c;
  c.sendCounts = l.dispatch.recvCounts;
  c.sdispls = l.dispatch.rdispls;
  c.recvCounts = l.dispatch.sendCounts;
  c.rdispls = l.dispatch.sdispls;
  if (tp > 1) {
    for (size_t q = 0; q < c.rdispls.size(); ++q) c.rdispls[q] += static_cast<int64_t>(q % tp) * planeRows;
  }
  return c;
}

AllToAllVLayout scaleLayout(const AllToAllVLayout& rows, int64_t rowNumel) {
  AllToAllVLayout e = rows;
  for (auto* v : {&e.sendCounts, &e.sdispls, &e.recvCounts, &e.rdispls}) {
    for (int64_t& x : *v) x *= rowNumel;
  }
  return e;
}

}  // namespace atb_ops
