// The shm backend's reductions above the eager limit, pipelined through the control segment.
//
// Rank r reduces shard r. Every rank copies its input's shard j, chunk by chunk, into a ring of slots in its
// own eager buffer of the call's parity (ring j); rank j adds those chunks, still in the caches, to its own
// input in rank order, writes each reduced chunk into its ring j and on to its output; for an all-reduce
// every other rank then copies that chunk from the ring into its output. Each rank works on whichever of
// the three streams can move (its rings have room, a peer staged or reduced a chunk), so on n cores all of
// them run at once. Everything crosses between processes through the segment the ranks share: the peers'
// own tensors are never read, whatever memory they are in (no process_vm_readv, whose page pinning costs
// twice a memcpy).
//
// The chunks of one call are counted on every rank's progress words (segment_layout.h), which only grow:
// all ranks completed the same calls, so each starts a call from the same counts. A ring slot is reused
// once every rank that reads it counted past it; the slots of a call's parity were last used two calls ago,
// which every peer finished before posting this call.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <vector>

#include "comm/shm/peer_memory.h"
#include "comm/shm/peer_wait.h"
#include "comm/shm/segment_layout.h"
#include "core/reduce.h"

namespace atb_ops::shm {

// One reduction as this rank sees it. Shard j's element count is the same on every rank.
struct PipeShards {
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  ReduceOp op = ReduceOp::kSum;
  std::vector<const char*> input;  // [j] this rank's elements of shard j
  std::vector<int64_t> count;      // [j] elements in shard j
  char* result = nullptr;          // this rank's reduced shard
  std::vector<char*> gatherTo;     // [j] where shard j's result goes on this rank; empty: no all-gather
  bool streaming = false;          // copy results out with non-temporal stores (far larger than the caches)
};

// Runs one reduction of the call with `parity`; returns when this rank's result (and, with gatherTo, every
// shard) is in place. Raises what `idle` raises when a peer stops moving.
void runReducePipeline(const SegmentView& view, const PeerMemory& peers, int32_t rank, uint32_t parity,
                       const PipeShards& shards, IdleWait& idle);

}  // namespace atb_ops::shm
