// Getting an HCCL communicator the way ATB does, and owning it correctly:
//   hcclComm != 0       -> the caller's communicator, adopted: used, never destroyed;
//   rankTableFile set   -> HcclCommInitClusterInfo(rankTableFile, rank);
//   commMode 1 (thread) -> the ranks are threads of this process: once all have arrived, one
//                          HcclCommInitAll(rankSize, devices) makes every rank's communicator;
//   otherwise           -> rankRoot's HcclGetRootInfo, exchanged (comm/bootstrap/), then HcclCommInitRootInfo.
#pragma once

#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/hccl/hccl_api.h"

namespace atb_ops::hccl {

enum class CommOrigin { kAdopted, kRankTable, kInitAll, kRootInfo };
const char* originName(CommOrigin o);

// One HCCL communicator handle and whoever must destroy it. Move-only; destruction of the last holder
// destroys a created communicator exactly once (for HcclCommInitAll: all of the group's, with the last
// rank), and never an adopted one.
class HcclCommRef {
 public:
  HcclCommRef() = default;
  HcclCommRef(HcclCommRef&&) noexcept = default;
  HcclCommRef& operator=(HcclCommRef&&) noexcept = default;
  HcclCommRef(const HcclCommRef&) = delete;
  HcclCommRef& operator=(const HcclCommRef&) = delete;

  static HcclCommRef adopt(CommHandle comm);
  static HcclCommRef own(std::shared_ptr<HcclApi> api, CommHandle comm, CommOrigin origin);
  // `keeper` keeps the whole group (and so `comm`) alive.
  static HcclCommRef shared(std::shared_ptr<void> keeper, CommHandle comm);

  CommHandle get() const { return comm_; }
  CommOrigin origin() const { return origin_; }
  bool owned() const { return origin_ != CommOrigin::kAdopted; }

 private:
  CommHandle comm_ = nullptr;
  CommOrigin origin_ = CommOrigin::kAdopted;
  std::shared_ptr<void> keeper_;  // null for an adopted communicator
};

// The device a rank's communicator lives on: the config's (the tensor's), else the rank itself, which is
// the usual one-rank-per-device layout.
int32_t deviceFor(const CommConfig& config);

// Creates or adopts the communicator for `config` (see the table at the top), with the device set to
// deviceFor(config) while HCCL binds it. Checks that HCCL's rank and size agree with the param.
HcclCommRef acquireComm(const std::shared_ptr<HcclApi>& api, const CommConfig& config);

// Makes `device` current on this thread for the scope (through HcclApi, so torch_npu sees it) and
// restores the previous device after. device < 0: no change.
class ScopedDevice {
 public:
  ScopedDevice(HcclApi& api, int32_t device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  HcclApi& api_;
  int32_t previous_ = -1;
};

}  // namespace atb_ops::hccl
