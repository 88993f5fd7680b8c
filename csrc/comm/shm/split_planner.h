// Who copies which bytes of a large message: the receiver pulls a head, the sender pushes the tail. A pure
// function of what every rank posted, so all ranks derive the same plan without talking.
#pragma once

#include <cstdint>
#include <vector>

namespace atb_ops::shm {

// All matrices are [src * n + dst].
struct SplitInput {
  int32_t n = 0;
  std::vector<uint64_t> direct;     // bytes that move straight between the buffers (not eager, not self)
  std::vector<uint64_t> eager;      // bytes that travel through the eager buffers (the receiver copies them)
  std::vector<uint64_t> self;       // [r]: bytes rank r copies to itself
  std::vector<uint8_t> pullMemcpy;  // 1: the receiver reads through its mapping of the sender's arena
  std::vector<uint8_t> pushMemcpy;  // 1: the sender writes through its mapping of the receiver's arena
  bool split = true;                // ATB_OPS_SHM_SPLIT
};

// Splits no message below this: a split costs a copy call on each side.
constexpr uint64_t kMinSplitBytes = uint64_t{256} << 10;
// Split points fall on page multiples.
constexpr uint64_t kSplitGranule = 4096;

// Fills `pushed` ([src * n + dst], resized) with the tail bytes of each direct message that its sender
// writes. Costs are in memcpy-byte units: 1 through an arena mapping, 2 through process_vm_readv/writev
// (page pinning, page-by-page copies). Each message starts on its cheaper side (ties: the receiver, which
// keeps its output in its own cache); then, when `split`, messages of at least kMinSplitBytes move bytes
// from the busier side to the other until the ranks' loads even out (two passes).
void planSplit(const SplitInput& in, std::vector<uint64_t>& pushed);

}  // namespace atb_ops::shm
