// The "shm" backend: CPU ranks on one host. Each rank posts where its send regions live in a shared
// control segment; each receiver copies straight out of the sender's memory with process_vm_readv
// (one copy, like Open MPI's CMA path), then all ranks meet so a sender's buffer outlives the reads.
#pragma once

#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/shm/shm_segment.h"

namespace atb_ops::shm {

struct SegmentHeader;
struct SlotHead;
struct PeerEntry;

class ShmCommunicator final : public Communicator {
 public:
  explicit ShmCommunicator(const CommConfig& config);

  const std::string& backend() const override { return backend_; }
  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }

  void alltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) override;
  void barrier() override;

 private:
  void attach(const CommConfig& config);
  SlotHead& slot(int32_t r) const;
  PeerEntry* entries(int32_t r) const;
  // Checks the whole posted count matrix; every rank sees the same matrix and raises the same error.
  void checkPostedMatrix(const char* what) const;
  // Publishes this rank's reason for giving up, once per communicator (the first rank to fail wins).
  void abortPeers(const std::string& reason);
  // Raises when a peer process is gone or a peer gave up; runs while waits sleep.
  void checkHealth(const char* what) const;
  void copyFromPeers(const at::Tensor& recv, const AllToAllVLayout& layout, std::string& error) const;

  std::string backend_ = "shm";
  int32_t rank_;
  int32_t size_;
  size_t slotStride_ = 0;
  uint32_t seq_ = 0;
  std::string brokenBy_;  // first fault that left peers out of step; later calls fail fast with it
  MappedSegment segment_;
};

}  // namespace atb_ops::shm
