#include "comm/eager_completion.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/reduce.h"

namespace atb_ops {

int64_t eagerRoom(int32_t size) {
  constexpr int64_t kEagerTotal = int64_t{16} << 10;
  return size <= 1 ? 0 : std::max<int64_t>(kEagerTotal / (size - 1) / 8 * 8, 256);
}

void LearnedRoom::learn(uint64_t call, int64_t need) {
  if (havePrevious_) {
    Followers& f = followersOf(previous_);
    f.before = f.last;
    f.last = need;
  }
  havePrevious_ = true;
  previous_ = call;
  const int64_t repeated = std::min(need, last_);
  last_ = need;
  const Followers& next = followersOf(call);
  const int64_t expected = std::max(repeated, std::min(next.last, next.before));
  room_ = expected > base_ && expected <= most_ ? (expected + 7) / 8 * 8 : base_;
}

LearnedRoom::Followers& LearnedRoom::followersOf(uint64_t call) {
  auto it = std::find_if(followers_.begin(), followers_.end(), [&](const Followers& f) { return f.after == call; });
  Followers found;
  if (it != followers_.end()) {
    found = *it;
    followers_.erase(it);
  } else {
    found.after = call;
    if (followers_.size() == kRemembered) followers_.erase(followers_.begin());
  }
  followers_.push_back(found);
  return followers_.back();
}

int64_t eagerBytes(const EagerCall& call, int32_t peer, int32_t me, int64_t room) {
  int64_t bytes = -1;
  switch (call.kind) {
    case Collective::kAlltoallv:
      bytes = call.layout->sendCounts[peer] * static_cast<int64_t>(call.send->element_size());
      break;
    case Collective::kAllgather:
    case Collective::kAllreduce: bytes = static_cast<int64_t>(call.send->nbytes()); break;
    case Collective::kBroadcast: bytes = me == call.root ? static_cast<int64_t>(call.send->nbytes()) : 0; break;
    default: return -1;
  }
  return bytes <= room ? bytes : -1;
}

bool eagerFits(const CallSignature& sig, Collective kind, int64_t room) {
  switch (kind) {
    case Collective::kBarrier: return true;  // the comparison itself waited for every rank
    case Collective::kAllgather:
    case Collective::kAllreduce:
    case Collective::kBroadcast: return static_cast<int64_t>(sig.bytes) <= room;
    default: return false;
  }
}

int64_t completeFromPayloads(const EagerCall& call, int32_t me, int32_t size,
                             const std::function<const char*(int32_t)>& payload) {
  const auto* send = call.send != nullptr ? static_cast<const char*>(call.send->data_ptr()) : nullptr;
  auto* recv = call.recv != nullptr ? static_cast<char*>(call.recv->data_ptr()) : nullptr;
  int64_t moved = 0;
  switch (call.kind) {
    case Collective::kAlltoallv: {
      const AllToAllVLayout& l = *call.layout;
      const int64_t es = call.send->element_size();
      // This rank's own chunk first: it is read from `send`, which the others' chunks may overwrite (in place).
      if (l.recvCounts[me] > 0) {
        std::memmove(recv + l.rdispls[me] * es, send + l.sdispls[me] * es, static_cast<size_t>(l.recvCounts[me] * es));
      }
      for (int32_t i = 0; i < size; ++i) {
        if (i == me || l.recvCounts[i] == 0) continue;
        std::memcpy(recv + l.rdispls[i] * es, payload(i), static_cast<size_t>(l.recvCounts[i] * es));
        moved += l.recvCounts[i] * es;
      }
      break;
    }
    case Collective::kAllgather: {
      const int64_t m = static_cast<int64_t>(call.send->nbytes());
      if (m == 0) break;
      std::memmove(recv + me * m, send, static_cast<size_t>(m));
      for (int32_t i = 0; i < size; ++i) {
        if (i == me) continue;
        std::memcpy(recv + i * m, payload(i), static_cast<size_t>(m));
        moved += m;
      }
      break;
    }
    case Collective::kAllreduce: {
      std::vector<const char*> parts;
      for (int32_t i = 0; i < size; ++i) parts.push_back(i == me ? send : payload(i));
      reduceInOrder(parts.data(), parts.size(), recv, call.send->numel(), call.send->scalar_type(), call.op);
      moved = (size - 1) * static_cast<int64_t>(call.send->nbytes());
      break;
    }
    case Collective::kBroadcast:
      if (me != call.root && call.recv->nbytes() > 0) {
        std::memcpy(recv, payload(call.root), call.recv->nbytes());
        moved = static_cast<int64_t>(call.recv->nbytes());
      }
      break;
    default: break;
  }
  return moved;
}

}  // namespace atb_ops
