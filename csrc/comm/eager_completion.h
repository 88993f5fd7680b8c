// Small calls finished from data that travelled inside a call comparison (Communicator::checkAndComplete): the
// rules every communicator that carries such data shares, so that they agree on when a call fits and on the bits
// of its result.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "comm/call_signature.h"
#include "comm/communicator.h"

namespace atb_ops {

// Bytes of data per peer a comparison among `size` ranks carries: 16 KiB over the peers, so a call of many ranks
// does not grow its comparison (2 ranks: 16 KiB; 4: 5456 B; 64: 256 B). Depends on the size only, so it is the
// same on every rank.
int64_t eagerRoom(int32_t size);

// The room per peer a communicator's next comparison carries (gloo's: two levels keep eagerRoom, see
// compareInTwoSteps): eagerRoom, or more, up to `most`, where the next call is expected to ride in it. Expected
// twice over: the last two calls compared both needed that much (a loop repeating a call finishes it in its
// comparison from its third time on), or the last two calls that followed one like the call just compared did (a
// loop cycling through several calls, a large one among small ones, finishes the large one in its comparison from
// its fourth round on, and the small ones keep the small room). Learned only from what every rank compared, so it is
// the same on every rank.
class LearnedRoom {
 public:
  LearnedRoom(int32_t size, int64_t most) : base_(eagerRoom(size)), most_(most), room_(base_) {}
  int64_t room() const { return room_; }
  // After a comparison every rank passed: `call`, what identifies the call compared (signatureDigest), and `need`,
  // the room its data would have taken (0: none rides).
  void learn(uint64_t call, int64_t need);

 private:
  // The needs of the two calls that most recently followed a call identified by `after` (0: not seen).
  struct Followers {
    uint64_t after = 0;
    int64_t last = 0;
    int64_t before = 0;
  };
  // Enough for the calls of a training step's loop; the least recently seen is forgotten first.
  static constexpr size_t kRemembered = 32;
  Followers& followersOf(uint64_t call);

  int64_t base_;
  int64_t most_;
  int64_t room_;
  int64_t last_ = 0;
  bool havePrevious_ = false;
  uint64_t previous_ = 0;
  std::vector<Followers> followers_;  // most recently used last
};

// Bytes `call` puts beside its signature for `peer` (`me`: this rank), or -1 when they exceed `room` (or none go
// there). Alltoallv sends each peer its chunk; all-gather and all-reduce their whole input; broadcast its root's
// tensor.
int64_t eagerBytes(const EagerCall& call, int32_t peer, int32_t me, int64_t room);

// Whether an all-gather, all-reduce or broadcast that every rank called as `sig` fits `room` (barrier always
// does; alltoallv is decided from its count matrix by the caller). The same answer on every rank that agreed.
bool eagerFits(const CallSignature& sig, Collective kind, int64_t room);

// Finishes `call` on rank `me` of `size` from what came with the comparison: `payload(r)` is rank r's data for
// this rank (never read for `me`). All-reduce reduces in rank order, as every rank does, so all get the same bits.
// Returns the bytes taken from other ranks.
int64_t completeFromPayloads(const EagerCall& call, int32_t me, int32_t size,
                             const std::function<const char*(int32_t)>& payload);

}  // namespace atb_ops
