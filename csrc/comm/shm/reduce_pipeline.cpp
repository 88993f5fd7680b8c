#include "comm/shm/reduce_pipeline.h"

#include <algorithm>
#include <cstring>

#include "core/reduce_kernels.h"
#include "core/status.h"

namespace atb_ops::shm {
namespace {

// Slots per ring: with 4, a producer can run 3 chunks ahead of its slowest reader before it waits.
constexpr uint32_t kSlots = 4;

class Pipeline {
 public:
  Pipeline(const SegmentView& view, int32_t rank, uint32_t parity, const PipeShards& s)
      : view_(view),
        s_(s),
        me_(rank),
        n_(view.rankSize()),
        parity_(parity),
        es_(static_cast<int64_t>(c10::elementSize(s.dtype))),
        slotBytes_(view.eagerBytes() / static_cast<size_t>(n_) / kSlots / 64 * 64),
        chunk_(static_cast<int64_t>(slotBytes_) / es_),
        gather_(!s.gatherTo.empty()) {
    ATB_CHECK(chunk_ > 0, ERROR_INTERNAL_ERROR, "shm reduction pipeline: ", view.eagerBytes(),
              " bytes of eager buffer leave no ring slot for ", n_, " ranks");
    for (int32_t j = 0; j < n_; ++j) {
      base_[kStagedIdx].push_back(word(me_, PipeCounter::kStaged, j).load(std::memory_order_relaxed));
      base_[kConsumedIdx].push_back(word(me_, PipeCounter::kConsumed, j).load(std::memory_order_relaxed));
      base_[kGatheredIdx].push_back(word(me_, PipeCounter::kGathered, j).load(std::memory_order_relaxed));
      chunks_.push_back(static_cast<uint32_t>((s.count[j] + chunk_ - 1) / chunk_));
    }
    reducedBase_ = word(me_, PipeCounter::kReduced, 0).load(std::memory_order_relaxed);
    staged_.assign(n_, 0);
    gathered_.assign(n_, 0);
    parts_.assign(n_, nullptr);
  }

  // Moves whatever can move; returns whether anything did. `blocked` names a peer this rank waits on.
  bool pass(int32_t& blocked) {
    bool moved = false;
    for (int32_t step = 1; step < n_; ++step) moved |= stage((me_ + step) % n_, blocked);
    moved |= reduce(blocked);
    if (gather_) {
      for (int32_t step = 1; step < n_; ++step) moved |= gatherFrom((me_ + step) % n_, blocked);
    }
    return moved;
  }

  bool done() const {
    if (reduced_ < chunks_[me_]) return false;
    for (int32_t j = 0; j < n_; ++j) {
      if (j == me_) continue;
      if (staged_[j] < chunks_[j] || (gather_ && gathered_[j] < chunks_[j])) return false;
    }
    return true;
  }

 private:
  enum { kStagedIdx = 0, kConsumedIdx = 1, kGatheredIdx = 2 };

  std::atomic<uint32_t>& word(int32_t r, PipeCounter which, int32_t j) const { return view_.counter(r, which, j); }
  uint32_t load(int32_t r, PipeCounter which, int32_t j) const {
    return word(r, which, j).load(std::memory_order_acquire);
  }
  // Slot of chunk k in ring `ring` of rank `owner`'s buffer.
  char* slot(int32_t owner, int32_t ring, uint32_t k) const {
    return view_.eager(owner, parity_) + (static_cast<size_t>(ring) * kSlots + k % kSlots) * slotBytes_;
  }
  int64_t offset(uint32_t k) const { return static_cast<int64_t>(k) * chunk_; }
  int64_t length(int32_t shard, uint32_t k) const { return std::min(chunk_, s_.count[shard] - offset(k)); }
  void copyOut(char* dst, const char* src, int64_t bytes) const {
    if (s_.streaming) {
      copyStreaming(dst, src, static_cast<size_t>(bytes));
    } else {
      std::memcpy(dst, src, static_cast<size_t>(bytes));
    }
  }

  // Copies chunks of this rank's shard j into ring j while rank j has reduced what the slots held.
  bool stage(int32_t j, int32_t& blocked) {
    bool moved = false;
    while (staged_[j] < chunks_[j]) {
      const uint32_t k = staged_[j];
      const uint32_t next = base_[kStagedIdx][j] + k + 1;
      if (k >= kSlots && !reached(load(j, PipeCounter::kConsumed, me_), next - kSlots)) {
        blocked = j;
        break;
      }
      std::memcpy(slot(me_, j, k), s_.input[j] + offset(k) * es_, static_cast<size_t>(length(j, k) * es_));
      word(me_, PipeCounter::kStaged, j).store(next, std::memory_order_release);
      ++staged_[j];
      moved = true;
    }
    return moved;
  }

  // Reduces this rank's next chunks once every peer staged them and has copied out what their slot held.
  bool reduce(int32_t& blocked) {
    bool moved = false;
    while (reduced_ < chunks_[me_]) {
      const uint32_t k = reduced_;
      for (int32_t j = 0; j < n_; ++j) {
        if (j == me_) continue;
        if (!reached(load(j, PipeCounter::kStaged, me_), base_[kConsumedIdx][j] + k + 1) ||
            (gather_ && k >= kSlots && !reached(load(j, PipeCounter::kGathered, me_), reducedBase_ + k + 1 - kSlots))) {
          blocked = j;
          return moved;
        }
      }
      const int64_t len = length(me_, k);
      for (int32_t j = 0; j < n_; ++j) parts_[j] = j == me_ ? s_.input[me_] + offset(k) * es_ : slot(j, me_, k);
      char* result = s_.result + offset(k) * es_;
      if (gather_) {
        // Into our ring for the peers first, then on to our output.
        char* ring = slot(me_, me_, k);
        reduceInOrder(parts_.data(), parts_.size(), ring, len, s_.dtype, s_.op);
        copyOut(result, ring, len * es_);
      } else {
        reduceInOrder(parts_.data(), parts_.size(), result, len, s_.dtype, s_.op);
      }
      for (int32_t j = 0; j < n_; ++j) {
        if (j != me_)
          word(me_, PipeCounter::kConsumed, j).store(base_[kConsumedIdx][j] + k + 1, std::memory_order_release);
      }
      // Only gatherers read kReduced: it counts all-reduce chunks, as their kGathered words do.
      if (gather_) word(me_, PipeCounter::kReduced, 0).store(reducedBase_ + k + 1, std::memory_order_release);
      ++reduced_;
      moved = true;
    }
    return moved;
  }

  // Copies rank j's reduced chunks from its ring into this rank's output.
  bool gatherFrom(int32_t j, int32_t& blocked) {
    bool moved = false;
    while (gathered_[j] < chunks_[j]) {
      const uint32_t k = gathered_[j];
      const uint32_t next = base_[kGatheredIdx][j] + k + 1;
      if (!reached(load(j, PipeCounter::kReduced, 0), next)) {
        blocked = j;
        break;
      }
      copyOut(s_.gatherTo[j] + offset(k) * es_, slot(j, j, k), length(j, k) * es_);
      word(me_, PipeCounter::kGathered, j).store(next, std::memory_order_release);
      ++gathered_[j];
      moved = true;
    }
    return moved;
  }

  const SegmentView& view_;
  const PipeShards& s_;
  const int32_t me_;
  const int32_t n_;
  const uint32_t parity_;
  const int64_t es_;
  const size_t slotBytes_;
  const int64_t chunk_;
  const bool gather_;
  std::vector<uint32_t> base_[3];  // our counters when the call began, per peer
  uint32_t reducedBase_ = 0;
  std::vector<uint32_t> chunks_;  // [j] chunks in shard j
  std::vector<uint32_t> staged_;  // this call's progress
  std::vector<uint32_t> gathered_;
  uint32_t reduced_ = 0;
  std::vector<const char*> parts_;
};

}  // namespace

void runReducePipeline(const SegmentView& view, const PeerMemory& peers, int32_t rank, uint32_t parity,
                       const PipeShards& shards, IdleWait& idle) {
  Pipeline pipe(view, rank, parity, shards);
  while (!pipe.done()) {
    int32_t blocked = (rank + 1) % view.rankSize();
    if (pipe.pass(blocked)) {
      idle.progressed();
    } else {
      idle.idle(blocked, peers.pid(blocked));
    }
  }
}

}  // namespace atb_ops::shm
