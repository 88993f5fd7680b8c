#include "comm/two_level_communicator.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <map>

#include "comm/backend_registry.h"
#include "core/memory.h"
#include "core/status.h"

namespace atb_ops {
namespace {

// Below this many bytes an all-reduce is latency-bound: the whole tensor is reduced in the host and then among
// same-local-rank peers (two steps, each local group carrying it all) instead of reduce-scatter, all-reduce of a
// shard and all-gather (three steps, 1/L of it on the link each).
constexpr int64_t kShardedAllreduceBytes = 64 * 1024;

// "its rank 0 is rank 2, its rank 1 is rank 3": a part's rank numbers in this communicator's.
std::string numbering(const std::vector<int32_t>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) {
    text += (i ? ", its rank " : "its rank ") + std::to_string(i) + " is rank " + std::to_string(ranks[i]);
  }
  return text;
}

class TwoLevelCommunicator final : public Communicator {
 public:
  TwoLevelCommunicator(const CommConfig& c, HostLayout layout)
      : Communicator("shm+gloo", c.rank, c.rankSize, c.options), layout_(std::move(layout)) {
    const std::string hostName = c.rankHosts[c.rank].substr(0, c.rankHosts[c.rank].find('/'));
    CommConfig base = c;
    base.rankHosts.clear();
    base.rankRoot = 0;
    base.hostsChecked = true;
    // Every rank makes the three in the same order; each meets under its own commDomain.
    CommConfig host = base;
    host.backend = "shm";
    host.rank = layout_.local;
    host.rankSize = layout_.perHost();
    host.commDomain = c.commDomain + "/host" + std::to_string(layout_.host);
    inHostNote_ = " (in the part of this communicator within host '" + hostName +
                  "': " + numbering(layout_.ranks[layout_.host]) + ")";
    CommConfig across = base;
    across.backend = "gloo";
    across.rank = layout_.host;
    across.rankSize = layout_.hosts();
    across.commDomain = c.commDomain + "/local" + std::to_string(layout_.local);
    std::vector<int32_t> peers;
    for (const std::vector<int32_t>& onHost : layout_.ranks) peers.push_back(onHost[layout_.local]);
    acrossNote_ = " (in the part of this communicator between hosts, local index " + std::to_string(layout_.local) +
                  " of each: " + numbering(peers) + ")";
    CommConfig everyone = base;
    everyone.backend = "gloo";
    inHost_ = createCommunicator(host);
    acrossHosts_ = createCommunicator(across);
    everyone_ = createCommunicator(everyone);
  }

 protected:
  // The collectives run in parts (all-reduce, all-gather, broadcast): every rank's call against every other's
  // before any part moves data. A part compares only its own ranks, so a host whose ranks agree would otherwise wait
  // between hosts for a host whose ranks found a disagreement, and time out. The rest run on `everyone_`, which
  // compares them itself.
  void crossCheck(const CallSignature& sig, const AllToAllVLayout* counts) override {
    if (inParts(static_cast<Collective>(sig.collective))) everyone_->compareCall(sig, counts);
  }
  // The same comparison, where a small call's data rides in it (a few KiB: everyone_'s room, backend gloo): then
  // the call is done there, one exchange among all ranks instead of that and the parts.
  EagerResult checkAndComplete(const CallSignature& sig, const AllToAllVLayout* counts,
                               const EagerCall& call) override {
    if (inParts(call.kind)) return everyone_->compareAndComplete(sig, counts, call);
    return EagerResult::kChecked;  // it runs on everyone_, which compares it itself
  }
  static bool inParts(Collective c) {
    return c == Collective::kAllreduce || c == Collective::kAllgather || c == Collective::kBroadcast;
  }

  void doAlltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) override {
    everyone_->alltoallv(send, layout, recv);
  }

  void doAllgatherv(const at::Tensor& send, const VLayout& recvLayout, at::Tensor& recv) override {
    everyone_->allgatherv(send, recvLayout, recv);
  }

  void doReduceScatterV(const at::Tensor& send, const VLayout& sendLayout, at::Tensor& recv, ReduceOp op) override {
    everyone_->reduceScatterV(send, sendLayout, recv, op);
  }

  void doSend(const at::Tensor& tensor, int32_t peer) override { everyone_->send(tensor, peer); }
  void doRecv(at::Tensor& tensor, int32_t peer) override { everyone_->recv(tensor, peer); }
  void doSendRecv(std::vector<P2pOp>& ops) override { everyone_->sendRecv(ops); }
  void doBarrier() override { everyone_->barrier(); }

  void doAllreduce(const at::Tensor& send, at::Tensor& recv, ReduceOp op) override {
    const int64_t n = send.numel();
    const int32_t perHost = layout_.perHost();
    at::Tensor out = recv.view({-1});
    if (send.nbytes() < kShardedAllreduceBytes || n < perHost) {
      inHost([&] { inHost_->allreduce(send.view({-1}), out, op); });
      acrossHosts([&] { acrossHosts_->allreduce(out, out, op); });
      return;
    }
    // Shard l of the host's sum goes to local index l; only shards cross the link.
    const int64_t chunk = (n + perHost - 1) / perHost;
    VLayout shards;
    for (int32_t l = 0; l < perHost; ++l) {
      const int64_t begin = std::min(n, l * chunk);
      shards.counts.push_back(std::min(n, begin + chunk) - begin);
      shards.displs.push_back(begin);
    }
    at::Tensor shard = at::empty({shards.counts[layout_.local]}, send.options());
    inHost([&] { inHost_->reduceScatterV(send.view({-1}), shards, shard, op); });
    acrossHosts([&] { acrossHosts_->allreduce(shard, shard, op); });
    inHost([&] { inHost_->allgatherv(shard, shards, out); });
  }

  void doAllgather(const at::Tensor& send, at::Tensor& recv) override {
    const int64_t m = send.numel();
    if (m == 0) return;
    const int32_t hosts = layout_.hosts();
    const int32_t perHost = layout_.perHost();
    // Each rank's part crosses the link once: gathered among same-local-rank peers (host order), then the
    // hosts' gathers are exchanged in the host: [local][host][m].
    at::Tensor acrossGathered = at::empty({hosts * m}, send.options());
    acrossHosts([&] { acrossHosts_->allgather(send.view({-1}), acrossGathered); });
    at::Tensor all = at::empty({perHost * hosts * m}, send.options());
    inHost([&] { inHost_->allgather(acrossGathered, all); });
    at::Tensor rows = recv.view({size(), m});
    const at::Tensor parts = all.view({perHost, hosts, m});
    for (int32_t h = 0; h < hosts; ++h) {
      for (int32_t l = 0; l < perHost; ++l) copyContiguous(rows[layout_.ranks[h][l]], parts[l][h]);
    }
  }

  void doBroadcast(at::Tensor& tensor, int32_t root) override {
    int32_t rootHost = 0;
    int32_t rootLocal = 0;
    for (int32_t h = 0; h < layout_.hosts(); ++h) {
      for (int32_t l = 0; l < layout_.perHost(); ++l) {
        if (layout_.ranks[h][l] == root) {
          rootHost = h;
          rootLocal = l;
        }
      }
    }
    at::Tensor flat = tensor.view({-1});
    if (layout_.local == rootLocal) acrossHosts([&] { acrossHosts_->broadcast(flat, rootHost); });
    inHost([&] { inHost_->broadcast(flat, rootLocal); });
  }

  void doShutdown() override {
    for (const std::shared_ptr<Communicator>& part : {inHost_, acrossHosts_, everyone_}) part->shutdown();
  }

 private:
  // A part's error, with its rank numbers told in this communicator's.
  template <typename F>
  void inHost(F&& f) {
    withNote(inHostNote_, std::forward<F>(f));
  }
  // Its calls skip their own comparison: this communicator compared every rank's call first (checkAndComplete).
  template <typename F>
  void acrossHosts(F&& f) {
    const Communicator::Trusted compared(*acrossHosts_);
    withNote(acrossNote_, std::forward<F>(f));
  }
  template <typename F>
  static void withNote(const std::string& note, F&& f) {
    try {
      f();
    } catch (const StatusError& e) {
      // The part's message already starts with the status's name.
      throw StatusError(e.status(), __func__, __FILE__, __LINE__, e.what_without_backtrace() + note);
    }
  }

  HostLayout layout_;
  std::string inHostNote_;
  std::string acrossNote_;
  std::shared_ptr<Communicator> inHost_;
  std::shared_ptr<Communicator> acrossHosts_;
  std::shared_ptr<Communicator> everyone_;
};

}  // namespace

std::unique_ptr<HostLayout> HostLayout::of(const std::vector<std::string>& rankHosts, int32_t rank) {
  auto layout = std::make_unique<HostLayout>();
  std::map<std::string, int32_t> index;
  for (int32_t r = 0; r < static_cast<int32_t>(rankHosts.size()); ++r) {
    auto [it, fresh] = index.emplace(rankHosts[r], static_cast<int32_t>(layout->ranks.size()));
    if (fresh) layout->ranks.emplace_back();
    if (r == rank) {
      layout->host = it->second;
      layout->local = static_cast<int32_t>(layout->ranks[it->second].size());
    }
    layout->ranks[it->second].push_back(r);
  }
  const size_t perHost = layout->ranks.front().size();
  const bool even = std::all_of(layout->ranks.begin(), layout->ranks.end(),
                                [&](const std::vector<int32_t>& onHost) { return onHost.size() == perHost; });
  if (!even || perHost == 1 || layout->ranks.size() == 1) return nullptr;
  return layout;
}

std::shared_ptr<Communicator> makeTwoLevelCommunicator(const CommConfig& config, const HostLayout& layout) {
  return std::make_shared<TwoLevelCommunicator>(config, layout);
}

}  // namespace atb_ops
