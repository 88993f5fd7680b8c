#include "comm/shm/segment_layout.h"

namespace atb_ops::shm {
namespace {

size_t roundUp(size_t n, size_t a) {
  return (n + a - 1) / a * a;
}

size_t postStrideFor(int32_t n) {
  return roundUp(sizeof(PostBlock) + sizeof(PeerEntry) * static_cast<size_t>(n), 64);
}

// One 64-byte aligned array of n words per PipeCounter, so each is read by its consumers apart from the others.
size_t counterStrideFor(int32_t n) {
  return roundUp(sizeof(std::atomic<uint32_t>) * static_cast<size_t>(n), 64);
}

size_t slotStrideFor(int32_t n, size_t eagerBytes) {
  return roundUp(sizeof(SlotHead) + 2 * postStrideFor(n) + 2 * eagerBytes + kPipeCounters * counterStrideFor(n), 64);
}

}  // namespace

size_t eagerBufferBytes(int32_t rankSize) {
  return rankSize <= 4 ? size_t{512} << 10 : size_t{256} << 10;
}

SegmentView::SegmentView(void* base, int32_t rankSize, size_t eagerBytes)
    : base_(static_cast<char*>(base)),
      size_(rankSize),
      eagerBytes_(eagerBytes),
      postStride_(postStrideFor(rankSize)),
      slotStride_(slotStrideFor(rankSize, eagerBytes)) {}

size_t SegmentView::bytesFor(int32_t n, size_t eagerBytes) {
  const size_t channels = sizeof(P2pChannel) * static_cast<size_t>(n) * static_cast<size_t>(n);
  return sizeof(SegmentHeader) + slotStrideFor(n, eagerBytes) * static_cast<size_t>(n) + channels;
}

SlotHead& SegmentView::slot(int32_t r) const {
  return *reinterpret_cast<SlotHead*>(base_ + sizeof(SegmentHeader) + slotStride_ * static_cast<size_t>(r));
}

PostBlock& SegmentView::post(int32_t r, uint32_t parity) const {
  return *reinterpret_cast<PostBlock*>(reinterpret_cast<char*>(&slot(r)) + sizeof(SlotHead) + postStride_ * parity);
}

PeerEntry* SegmentView::entries(int32_t r, uint32_t parity) const {
  return reinterpret_cast<PeerEntry*>(reinterpret_cast<char*>(&post(r, parity)) + sizeof(PostBlock));
}

char* SegmentView::eager(int32_t r, uint32_t parity) const {
  return reinterpret_cast<char*>(&slot(r)) + sizeof(SlotHead) + 2 * postStride_ + eagerBytes_ * parity;
}

std::atomic<uint32_t>& SegmentView::counter(int32_t r, PipeCounter which, int32_t j) const {
  char* words = eager(r, 0) + 2 * eagerBytes_ + counterStrideFor(size_) * static_cast<size_t>(which);
  return reinterpret_cast<std::atomic<uint32_t>*>(words)[j];
}

P2pChannel& SegmentView::channel(int32_t src, int32_t dst) const {
  char* channels = base_ + sizeof(SegmentHeader) + slotStride_ * static_cast<size_t>(size_);
  return reinterpret_cast<P2pChannel*>(channels)[static_cast<size_t>(src) * size_ + dst];
}

}  // namespace atb_ops::shm
