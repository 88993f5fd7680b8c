#include "core/layout.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace atb_ops {
namespace {

std::string show(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
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

  // Receive regions must not overlap: two peers writing one element would race.
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

void checkCountMatrix(int32_t n, const std::function<int64_t(int32_t, int32_t)>& sent,
                      const std::function<int64_t(int32_t, int32_t)>& expected, const char* what) {
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t j = 0; j < n; ++j) {
      const int64_t s = sent(i, j);
      const int64_t e = expected(j, i);
      ATB_CHECK(s == e, ERROR_INVALID_PARAM, what, ": count mismatch: rank ", i, " sends ", s, " elements to rank ", j,
                ", but rank ", j, " expects ", e, " from rank ", i, " (sendCounts[", j, "] on rank ", i,
                " vs recvCounts[", i, "] on rank ", j, ")");
    }
  }
}

AllToAllVLayout transposedLayout(const AllToAllVLayout& l) {
  return AllToAllVLayout{l.recvCounts, l.rdispls, l.sendCounts, l.sdispls};
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
  nlohmann::json obj;
  try {
    obj = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    ATB_FAIL(ERROR_INVALID_PARAM, "variant pack param is not valid JSON (", e.what(), "): '", text, "'");
  }
  ATB_CHECK(obj.is_object(), ERROR_INVALID_PARAM, "variant pack param must be a JSON object, got '", text, "'");
  AllToAllVLayout l;
  const std::pair<const char*, std::vector<int64_t>*> fields[] = {
      {"sendCounts", &l.sendCounts}, {"sdispls", &l.sdispls}, {"recvCounts", &l.recvCounts}, {"rdispls", &l.rdispls}};
  for (const auto& [key, value] : obj.items()) {
    bool known = false;
    for (const auto& [name, out] : fields) {
      if (key != name) continue;
      known = true;
      ATB_CHECK(value.is_array(), ERROR_INVALID_PARAM, "variant pack '", key, "' must be an array of integers, got ",
                value.dump());
      for (const auto& item : value) {
        ATB_CHECK(item.is_number_integer(), ERROR_INVALID_PARAM, "variant pack '", key,
                  "' must hold integers only, got ", value.dump());
        out->push_back(item.get<int64_t>());
      }
    }
    ATB_CHECK(known, ERROR_INVALID_PARAM, "variant pack has unknown key '", key,
              "'; expected sendCounts, sdispls, recvCounts, rdispls");
  }
  for (const auto& [name, out] : fields) {
    ATB_CHECK(obj.contains(name), ERROR_INVALID_PARAM, "variant pack is missing '", name, "': '", text, "'");
  }
  return l;
}

}  // namespace atb_ops
