#include "core/layout.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "core/status.h"

namespace atb_ops {
namespace {

std::string show(const std::vector<int64_t>& v) {
  std::ostringstream os;
  // Long arrays (thousands of ranks) are cut: the message names the entry that is wrong anyway.
  constexpr size_t kShown = 16;
  os << '[';
  for (size_t i = 0; i < v.size() && i < kShown; ++i) os << (i ? ", " : "") << v[i];
  if (v.size() > kShown) os << ", ... (" << v.size() << " entries)";
  os << ']';
  return os.str();
}

void checkArray(const std::vector<int64_t>& v, const char* name, int64_t rankSize) {
  ATB_CHECK(static_cast<int64_t>(v.size()) == rankSize, ERROR_INVALID_PARAM, name, " has ", v.size(),
            " entries but rankSize is ", rankSize, ": ", name, "=", show(v));
  for (size_t i = 0; i < v.size(); ++i) {
    ATB_CHECK(v[i] >= 0, ERROR_INVALID_PARAM, name, "[", i, "] is ", v[i], "; must be >= 0: ", name, "=", show(v));
  }
}

// Region [displ, displ+count) inside [0, limit), written so that huge values cannot overflow.
bool inside(int64_t displ, int64_t count, int64_t limit) {
  return displ <= limit && count <= limit - displ;
}

}  // namespace

int64_t AllToAllVLayout::totalRecv() const {
  return std::accumulate(recvCounts.begin(), recvCounts.end(), int64_t{0});
}

int64_t AllToAllVLayout::totalSend() const {
  return std::accumulate(sendCounts.begin(), sendCounts.end(), int64_t{0});
}

int64_t validateLayout(const AllToAllVLayout& l, int64_t rankSize, int64_t sendNumel, int64_t recvCapacity) {
  ATB_CHECK(rankSize > 0, ERROR_INVALID_PARAM, "rankSize must be > 0, got ", rankSize);
  checkArray(l.sendCounts, "sendCounts", rankSize);
  checkArray(l.sdispls, "sdispls", rankSize);
  checkArray(l.recvCounts, "recvCounts", rankSize);
  checkArray(l.rdispls, "rdispls", rankSize);

  int64_t recvTotal = 0;
  for (int64_t c : l.recvCounts) {
    ATB_CHECK(c <= INT64_MAX - recvTotal, ERROR_INVALID_PARAM, "sum(recvCounts) overflows int64: ", show(l.recvCounts));
    recvTotal += c;
  }
  const int64_t capacity = recvCapacity < 0 ? recvTotal : recvCapacity;

  for (int64_t i = 0; i < rankSize; ++i) {
    ATB_CHECK(inside(l.sdispls[i], l.sendCounts[i], sendNumel), ERROR_INVALID_PARAM, "send region for rank ", i,
              " [sdispls[", i, "]=", l.sdispls[i], ", +sendCounts[", i, "]=", l.sendCounts[i], ") exceeds the input's ",
              sendNumel, " elements");
    ATB_CHECK(inside(l.rdispls[i], l.recvCounts[i], capacity), ERROR_INVALID_PARAM, "receive region for rank ", i,
              " [rdispls[", i, "]=", l.rdispls[i], ", +recvCounts[", i, "]=", l.recvCounts[i],
              ") exceeds the output's ", capacity, " elements");
  }

  // Receive regions must not overlap: two peers writing one element would race. Regions in rank order (the
  // usual layout) are checked without sorting.
  int64_t end = 0;
  bool ordered = true;
  for (int64_t i = 0; i < rankSize && ordered; ++i) {
    if (l.recvCounts[i] == 0) continue;
    ordered = l.rdispls[i] >= end;
    end = l.rdispls[i] + l.recvCounts[i];
  }
  if (ordered) return recvTotal;
  std::vector<std::pair<int64_t, int64_t>> regions;  // (start, rank)
  for (int64_t i = 0; i < rankSize; ++i) {
    if (l.recvCounts[i] > 0) regions.emplace_back(l.rdispls[i], i);
  }
  std::sort(regions.begin(), regions.end());
  for (size_t k = 1; k < regions.size(); ++k) {
    const int64_t a = regions[k - 1].second;
    const int64_t b = regions[k].second;
    ATB_CHECK(l.rdispls[a] + l.recvCounts[a] <= l.rdispls[b], ERROR_INVALID_PARAM, "receive regions overlap: rank ", a,
              " [", l.rdispls[a], ", ", l.rdispls[a] + l.recvCounts[a], ") and rank ", b, " [", l.rdispls[b], ", ",
              l.rdispls[b] + l.recvCounts[b], "); rdispls=", show(l.rdispls), " recvCounts=", show(l.recvCounts));
  }
  return recvTotal;
}

void countMismatch(const char* what, int32_t i, int32_t j, int64_t sent, int64_t expected) {
  ATB_FAIL(ERROR_INVALID_PARAM, what, ": count mismatch: rank ", i, " sends ", sent, " elements to rank ", j,
           ", but rank ", j, " expects ", expected, " from rank ", i, " (sendCounts[", j, "] on rank ", i,
           " vs recvCounts[", i, "] on rank ", j, ")");
}

AllToAllVLayout equalSplitLayout(int64_t rankSize, int64_t chunk) {
  AllToAllVLayout l;
  for (int64_t i = 0; i < rankSize; ++i) {
    l.sendCounts.push_back(chunk);
    l.sdispls.push_back(i * chunk);
    l.recvCounts.push_back(chunk);
    l.rdispls.push_back(i * chunk);
  }
  return l;
}

AllToAllVLayout allGatherLayout(int64_t rankSize, int64_t numel) {
  AllToAllVLayout l = equalSplitLayout(rankSize, numel);
  std::fill(l.sdispls.begin(), l.sdispls.end(), 0);
  return l;
}

AllToAllVLayout parseLayoutJson(const std::string& text) {
  const nlohmann::json obj = parseJsonObject(text, "variant pack param");
  JsonFields f(obj, "variant pack");
  AllToAllVLayout l;
  const std::pair<const char*, std::vector<int64_t>*> fields[] = {
      {"sendCounts", &l.sendCounts}, {"sdispls", &l.sdispls}, {"recvCounts", &l.recvCounts}, {"rdispls", &l.rdispls}};
  for (const auto& [name, out] : fields) {
    ATB_CHECK(f.has(name), ERROR_INVALID_PARAM, "variant pack is missing '", name, "': '", excerpt(text), "'");
    *out = f.int64Array(name, {});
  }
  f.checkUnknownKeys();
  return l;
}

int64_t VLayout::total() const {
  return std::accumulate(counts.begin(), counts.end(), int64_t{0});
}

void validateVLayout(const VLayout& l, int64_t rankSize, int64_t capacity, bool disjoint, const char* countsName,
                     const char* displsName) {
  ATB_CHECK(rankSize > 0, ERROR_INVALID_PARAM, "rankSize must be > 0, got ", rankSize);
  checkArray(l.counts, countsName, rankSize);
  checkArray(l.displs, displsName, rankSize);
  for (int64_t i = 0; i < rankSize; ++i) {
    ATB_CHECK(inside(l.displs[i], l.counts[i], capacity), ERROR_INVALID_PARAM, "region of rank ", i, " [", displsName,
              "[", i, "]=", l.displs[i], ", +", countsName, "[", i, "]=", l.counts[i], ") exceeds the tensor's ",
              capacity, " elements");
  }
  if (!disjoint) return;
  std::vector<std::pair<int64_t, int64_t>> regions;
  for (int64_t i = 0; i < rankSize; ++i) {
    if (l.counts[i] > 0) regions.emplace_back(l.displs[i], i);
  }
  std::sort(regions.begin(), regions.end());
  for (size_t k = 1; k < regions.size(); ++k) {
    const int64_t a = regions[k - 1].second;
    const int64_t b = regions[k].second;
    ATB_CHECK(l.displs[a] + l.counts[a] <= l.displs[b], ERROR_INVALID_PARAM, "regions overlap: rank ", a, " [",
              l.displs[a], ", ", l.displs[a] + l.counts[a], ") and rank ", b, " [", l.displs[b], ", ",
              l.displs[b] + l.counts[b], "); ", displsName, "=", show(l.displs), " ", countsName, "=", show(l.counts));
  }
}

std::string formatRanks(const std::vector<int64_t>& ranks) {
  std::ostringstream os;
  size_t i = 0;
  size_t shown = 0;
  while (i < ranks.size()) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (shown++ > 0) os << ", ";
    if (shown > 8) {
      os << "...";
      break;
    }
    os << ranks[i];
    if (j > i) os << "-" << ranks[j];
    i = j + 1;
  }
  if (ranks.size() > 2) os << " (" << ranks.size() << " ranks)";
  return os.str();
}

std::string formatRanksByLabel(const std::vector<std::string>& labelOfRank) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> groups;
  for (size_t r = 0; r < labelOfRank.size(); ++r) {
    const std::string& label = labelOfRank[r];
    if (label.empty()) continue;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == label; });
    if (it == groups.end()) {
      groups.push_back({label, {static_cast<int64_t>(r)}});
    } else {
      it->second.push_back(static_cast<int64_t>(r));
    }
  }
  std::string out;
  for (const auto& [label, ranks] : groups) {
    if (!out.empty()) out += ", ";
    out += (ranks.size() == 1 ? "rank " : "ranks ") + formatRanks(ranks) + " on '" + label + "'";
  }
  return out;
}

}  // namespace atb_ops
