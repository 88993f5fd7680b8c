#include "comm/shm/split_planner.h"

#include <algorithm>
#include <cmath>

namespace atb_ops::shm {

void planSplit(const SplitInput& in, std::vector<uint64_t>& pushed) {
  const int32_t n = in.n;
  const size_t cells = static_cast<size_t>(n) * n;
  pushed.assign(cells, 0);
  std::vector<double> load(static_cast<size_t>(n), 0.0);
  for (int32_t r = 0; r < n; ++r) load[r] = static_cast<double>(in.self[r]);
  auto pullCost = [&](size_t k) { return in.pullMemcpy[k] ? 1.0 : 2.0; };
  auto pushCost = [&](size_t k) { return in.pushMemcpy[k] ? 1.0 : 2.0; };
  bool any = false;
  for (int32_t src = 0; src < n; ++src) {
    for (int32_t dst = 0; dst < n; ++dst) {
      const size_t k = static_cast<size_t>(src) * n + dst;
      const uint64_t direct = in.direct[k];
      const double bytes = static_cast<double>(direct);
      if (direct > 0 && pushCost(k) < pullCost(k)) {
        pushed[k] = direct;
        load[src] += pushCost(k) * bytes;
      } else if (direct > 0) {
        load[dst] += pullCost(k) * bytes;
      }
      load[dst] += static_cast<double>(in.eager[k]);
      any = any || direct >= kMinSplitBytes;
    }
  }
  if (!in.split || !any) return;
  for (int pass = 0; pass < 2; ++pass) {
    for (int32_t src = 0; src < n; ++src) {
      for (int32_t dst = 0; dst < n; ++dst) {
        const size_t k = static_cast<size_t>(src) * n + dst;
        const uint64_t direct = in.direct[k];
        if (direct < kMinSplitBytes || load[dst] == load[src]) continue;
        const double gap = std::abs(load[dst] - load[src]) / (pullCost(k) + pushCost(k));
        const bool toSender = load[dst] > load[src];
        const uint64_t room = toSender ? direct - pushed[k] : pushed[k];
        const uint64_t delta = std::min<uint64_t>(room, static_cast<uint64_t>(gap)) / kSplitGranule * kSplitGranule;
        if (delta == 0) continue;
        const double d = static_cast<double>(delta);
        if (toSender) {
          pushed[k] += delta;
          load[dst] -= pullCost(k) * d;
          load[src] += pushCost(k) * d;
        } else {
          pushed[k] -= delta;
          load[src] -= pushCost(k) * d;
          load[dst] += pullCost(k) * d;
        }
      }
    }
  }
}

}  // namespace atb_ops::shm
