#include "comm/c10d/c10d_communicator.h"

#include <ATen/ops/empty.h>
#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>

#include <unistd.h>

#include <fstream>
#include <mutex>
#include <thread>

#include "core/env.h"
#include "core/memory.h"
#include "core/process.h"
#include "core/status.h"

namespace atb_ops::c10dcomm {
namespace {

std::mutex& resolverMutex() {
  static std::mutex m;
  return m;
}

GroupResolver& resolver() {
  static GroupResolver r;
  return r;
}

// A flat byte view of a contiguous tensor: gloo then needs no per-dtype support.
at::Tensor bytesOf(const at::Tensor& t) {
  return t.reshape({-1}).view(at::kByte).reshape({-1});
}

bool packedInRankOrder(const std::vector<int64_t>& counts, const std::vector<int64_t>& displs) {
  int64_t offset = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] != 0 && displs[i] != offset) return false;
    offset += counts[i];
  }
  return true;
}

std::vector<int64_t> scaled(const std::vector<int64_t>& v, int64_t by) {
  std::vector<int64_t> out(v);
  for (auto& x : out) x *= by;
  return out;
}

int64_t hostHash() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string boot;
  f >> boot;
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return static_cast<int64_t>(std::hash<std::string>{}(std::string(host) + "/" + boot) >> 1);
}

}  // namespace

void setGroupResolver(GroupResolver r) {
  std::lock_guard<std::mutex> lock(resolverMutex());
  resolver() = std::move(r);
}

C10dCommunicator::C10dCommunicator(const CommConfig& c) {
  ATB_CHECK(c.handle == 0, ERROR_INVALID_PARAM, "backend 'gloo' takes no hcclComm handle, got ", c.handle);
  GroupResolver r;
  {
    std::lock_guard<std::mutex> lock(resolverMutex());
    r = resolver();
  }
  groupName_ = r ? r(c) : (c.groupName.empty() ? std::string("0") : c.groupName);
  try {
    pg_ = c10d::resolve_process_group(groupName_);
  } catch (const c10::Error& e) {
    ATB_FAIL(ERROR_COMM_EMPTY, "backend 'gloo' found no torch.distributed process group '", groupName_,
             "': call torch.distributed.init_process_group('gloo') or set MASTER_ADDR/MASTER_PORT (",
             e.what_without_backtrace(), ")");
  }
  ATB_CHECK(pg_->getRank() == c.rank && pg_->getSize() == c.rankSize, ERROR_INVALID_PARAM,
            "backend 'gloo': param says rank ", c.rank, " of rankSize ", c.rankSize, " but process group '", groupName_,
            "' has rank ", pg_->getRank(), " of size ", pg_->getSize());
  // Who is who: lets a failed wait name the peer that died (gloo itself reports only addresses).
  at::Tensor mine = at::empty({2}, at::kLong);
  mine[0] = hostHash();
  mine[1] = static_cast<int64_t>(::getpid());
  at::Tensor all = at::empty({2 * pg_->getSize()}, at::kLong);
  waitFor(pg_->_allgather_base(all, mine), "identity exchange");
  for (int64_t r = 0; r < pg_->getSize(); ++r) {
    peerHosts_.push_back(all[2 * r].item<int64_t>());
    peerPids_.push_back(all[2 * r + 1].item<int64_t>());
  }
}

std::string C10dCommunicator::deadPeers() const {
  std::string dead;
  const int64_t here = hostHash();
  for (size_t r = 0; r < peerPids_.size(); ++r) {
    if (peerHosts_[r] == here && !processAlive(static_cast<pid_t>(peerPids_[r]))) {
      dead += (dead.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " (pid " +
              std::to_string(peerPids_[r]) + ")";
    }
  }
  return dead;
}

void C10dCommunicator::waitFor(const c10::intrusive_ptr<c10d::Work>& work, const char* what) const {
  const auto timeout = peerTimeout();
  std::string error;
  try {
    work->wait(timeout);
    return;
  } catch (const c10::Error& e) {
    error = e.what_without_backtrace();
  } catch (const std::exception& e) {
    error = e.what();
  }
  // A killed peer's sockets close while it is still exiting: give its death a moment to show in /proc.
  std::string dead = deadPeers();
  for (int i = 0; i < 100 && dead.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    dead = deadPeers();
  }
  ATB_CHECK(dead.empty(), ERROR_COMM_PEER_DIED, "gloo ", what, " on group '", groupName_, "' (rank ", rank(), " of ",
            size(), "): peer ", dead, " exited: ", error);
  ATB_FAIL(ERROR_COMM_TIMEOUT, "gloo ", what, " on group '", groupName_, "' (rank ", rank(), " of ", size(),
           ") failed or timed out (ATB_OPS_TIMEOUT=", std::chrono::duration<double>(timeout).count(), " s): ", error);
}

void C10dCommunicator::crossCheck(const at::Tensor& send, const AllToAllVLayout& l) const {
  const int64_t n = size();
  at::Tensor mine = at::empty({2 * n + 1}, at::kLong);
  for (int64_t j = 0; j < n; ++j) {
    mine[j] = l.sendCounts[j];
    mine[n + j] = l.recvCounts[j];
  }
  mine[2 * n] = static_cast<int64_t>(send.scalar_type());
  at::Tensor all = at::empty({n * (2 * n + 1)}, at::kLong);
  waitFor(pg_->_allgather_base(all, mine), "count cross-check");
  const int64_t* m = all.data_ptr<int64_t>();
  const int64_t stride = 2 * n + 1;
  for (int64_t r = 0; r < n; ++r) {
    ATB_CHECK(m[r * stride + 2 * n] == m[2 * n], ERROR_INVALID_TENSOR_DTYPE, "gloo alltoallv: rank ", r,
              " moves dtype ", c10::toString(static_cast<c10::ScalarType>(m[r * stride + 2 * n])), " but rank 0 moves ",
              c10::toString(static_cast<c10::ScalarType>(m[2 * n])));
  }
  checkCountMatrix(
      static_cast<int32_t>(n), [&](int32_t i, int32_t j) { return m[i * stride + j]; },
      [&](int32_t j, int32_t i) { return m[j * stride + n + i]; }, "gloo alltoallv (count cross-check)");
}

void C10dCommunicator::alltoallv(const at::Tensor& send, const AllToAllVLayout& l, at::Tensor& recv) {
  if (crossRankCheck(/*backendDefault=*/true)) crossCheck(send, l);
  const int64_t es = send.element_size();
  at::Tensor sendBytes = bytesOf(send);
  at::Tensor recvBytes = bytesOf(recv);

  // Displacements with gaps, overlaps or another order: gather into rank order first.
  at::Tensor in = sendBytes;
  if (!packedInRankOrder(l.sendCounts, l.sdispls)) {
    in = at::empty({l.totalSend() * es}, sendBytes.options());
    int64_t offset = 0;
    for (size_t i = 0; i < l.sendCounts.size(); ++i) {
      const int64_t n = l.sendCounts[i] * es;
      in.narrow(0, offset, n).copy_(sendBytes.narrow(0, l.sdispls[i] * es, n));
      offset += n;
    }
  } else {
    in = sendBytes.narrow(0, 0, l.totalSend() * es);
  }
  const bool recvPacked = packedInRankOrder(l.recvCounts, l.rdispls);
  at::Tensor out =
      recvPacked ? recvBytes.narrow(0, 0, l.totalRecv() * es) : at::empty({l.totalRecv() * es}, recvBytes.options());

  std::vector<int64_t> inSplits = scaled(l.sendCounts, es);
  std::vector<int64_t> outSplits = scaled(l.recvCounts, es);
  waitFor(pg_->all_to_all_single(out, in, outSplits, inSplits), "alltoallv");

  if (!recvPacked) {
    int64_t offset = 0;
    for (size_t i = 0; i < l.recvCounts.size(); ++i) {
      const int64_t n = l.recvCounts[i] * es;
      recvBytes.narrow(0, l.rdispls[i] * es, n).copy_(out.narrow(0, offset, n));
      offset += n;
    }
  }
}

void C10dCommunicator::allgather(const at::Tensor& send, at::Tensor& recv) {
  at::Tensor in = bytesOf(send);
  at::Tensor out = bytesOf(recv);
  // gloo's allgather is 3-4x slower than its all_to_all_single moving the same bytes once messages reach
  // megabytes (measured on loopback, 2 ranks: 16 MiB each, 53 ms vs 15 ms), so large ones go as an
  // all-to-all of size() copies of the input; small ones keep allgather's lower latency.
  constexpr int64_t kAllToAllFromBytes = int64_t{1} << 20;
  if (size() > 1 && in.numel() >= kAllToAllFromBytes) {
    at::Tensor copies = at::empty({size(), in.numel()}, in.options());
    adviseHugePages(copies);
    copies.copy_(in.unsqueeze(0).expand({size(), in.numel()}));
    copies = copies.view({-1});
    std::vector<int64_t> inSplits(static_cast<size_t>(size()), in.numel());
    std::vector<int64_t> outSplits = inSplits;
    waitFor(pg_->all_to_all_single(out, copies, outSplits, inSplits), "allgather");
    return;
  }
  waitFor(pg_->_allgather_base(out, in), "allgather");
}

void C10dCommunicator::barrier() {
  waitFor(pg_->barrier(), "barrier");
}

namespace {
const bool registered = [] {
  registerBackend("gloo", [](const CommConfig& c) { return std::make_shared<C10dCommunicator>(c); });
  return true;
}();
}  // namespace

}  // namespace atb_ops::c10dcomm
