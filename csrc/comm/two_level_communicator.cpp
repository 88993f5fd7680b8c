#include "comm/two_level_communicator.h"

#include <ATen/ops/empty.h>

#include <ATen/ops/zeros.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "comm/backend_registry.h"
#include "comm/eager_completion.h"
#include "core/host.h"
#include "core/memory.h"
#include "core/status.h"

namespace atb_ops {
namespace {

// Below this many bytes an all-reduce is latency-bound: the whole tensor is reduced in the host and then among
// same-local-rank peers (two steps, each local group carrying it all) instead of reduce-scatter, all-reduce of a
// shard and all-gather (three steps, 1/L of it on the link each).
constexpr int64_t kShardedAllreduceBytes = 64 * 1024;

// Up to this many bytes from any one rank to other hosts, an all-to-all crosses the link in one message per host
// pair and local index and is handed on in the host (alltoallvByHosts): fewer, larger messages pay while each
// message's cost leads. Past it, the group of every rank moves the in-host and cross-host chunks at once, which the
// three steps in turn cannot (2 x 2 at 10 Gbit/s: 16 MiB took 30 ms by hosts, 19 ms in the group).
constexpr int64_t kByHostsMaxBytes = 1 << 20;

// The most sooner the part between hosts gives up than the whole's timeout (a tenth of it where that is less).
constexpr std::chrono::milliseconds kAcrossEarlyMost{2000};

// "its rank 0 is rank 2, its rank 1 is rank 3": a part's rank numbers in this communicator's.
std::string numbering(const std::vector<int32_t>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) {
    text += (i ? ", its rank " : "its rank ") + std::to_string(i) + " is rank " + std::to_string(ranks[i]);
  }
  return text;
}

// The ranks whose host identity names the same boot as `rank`'s (core/host.h bootIdOf): they share its cores.
int32_t ranksOnThisKernel(const std::vector<std::string>& rankHosts, int32_t rank) {
  const std::string mine = bootIdOf(rankHosts[rank]);
  if (mine.empty()) return 0;  // unknown: count only the host's own ranks
  return static_cast<int32_t>(
      std::count_if(rankHosts.begin(), rankHosts.end(), [&](const std::string& h) { return bootIdOf(h) == mine; }));
}

class TwoLevelCommunicator final : public Communicator {
 public:
  TwoLevelCommunicator(const CommConfig& c, HostLayout layout)
      : Communicator("shm+gloo", c.rank, c.rankSize, c.options), layout_(std::move(layout)) {
    const std::string hostName = hostNameOf(c.rankHosts[c.rank]);
    CommConfig base = c;
    base.rankHosts.clear();
    base.rankRoot = 0;
    base.hostsChecked = true;
    // A torch.distributed group's communicator (atb_ops.distributed): the group spans every rank, so it carries
    // what runs among all of them; the parts are groups of their own.
    base.group = nullptr;
    base.groupId = nullptr;
    // Every rank makes the three in the same order; each meets under its own commDomain.
    CommConfig host = base;
    host.backend = "shm";
    host.rank = layout_.local;
    host.rankSize = layout_.perHost();
    host.commDomain = c.commDomain + "/host" + std::to_string(layout_.host);
    host.kernelRanks = ranksOnThisKernel(c.rankHosts, c.rank);
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
    across.wholeRanks = peers;
    // It gives up a little before the ranks of its host that wait for it there, and tells them (acrossHosts), so
    // every rank of the host names the lost host, none this rank.
    across.options.timeout.early = std::min<std::chrono::milliseconds>(c.options.timeout.value / 10, kAcrossEarlyMost);
    CommConfig everyone = base;
    everyone.group = c.group;
    everyone.groupId = c.groupId;
    everyone.backend = "gloo";
    inHost_ = createCommunicator(host);
    acrossHosts_ = createCommunicator(across);
    everyone_ = createCommunicator(everyone);
    stats_.spins.store(inHost_->stats().spins.load());
  }

 protected:
  // Every collective is compared over all ranks before any data moves, the same way whatever it is (so ranks that
  // called different collectives still meet in the same exchanges, and all raise): a part compares only its own
  // ranks, so a host whose ranks agree would otherwise wait between hosts for a host whose ranks found a
  // disagreement, and time out. The parts then skip their own comparison.
  void crossCheck(const CallSignature& sig, const AllToAllVLayout* counts) override {
    compareInTwoSteps(sig, counts, nullptr);
  }
  // The same comparison, where a small call's data rides in it (eagerRoom bytes of every rank): then the call is
  // done there.
  EagerResult checkAndComplete(const CallSignature& sig, const AllToAllVLayout* counts,
                               const EagerCall& call) override {
    return compareInTwoSteps(sig, counts, &call);
  }

  void doAlltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) override {
    // The count matrix this call agreed on routes the data between hosts, and decides alike on every rank how.
    const bool countsKnown = std::exchange(countsCompared_, false);
    const int64_t rode = std::exchange(rodeBytes_, 0);
    if (!countsKnown || mostToOtherHosts(send.element_size()) > kByHostsMaxBytes) {
      everyone([&] { everyone_->alltoallv(send, layout, recv); });
      return;
    }
    alltoallvByHosts(send, layout, recv, rode);
  }

  void doAllgatherv(const at::Tensor& send, const VLayout& recvLayout, at::Tensor& recv) override {
    everyone([&] { everyone_->allgatherv(send, recvLayout, recv); });
  }

  void doReduceScatterV(const at::Tensor& send, const VLayout& sendLayout, at::Tensor& recv, ReduceOp op) override {
    everyone([&] { everyone_->reduceScatterV(send, sendLayout, recv, op); });
  }

  // Point to point checks each message itself (sizes first), so it needs no comparison of the whole call.
  void doSend(const at::Tensor& tensor, int32_t peer, int32_t tag) override { everyone_->send(tensor, peer, tag); }
  void doRecv(at::Tensor& tensor, int32_t peer, int32_t tag) override { everyone_->recv(tensor, peer, tag); }
  void doSendRecv(std::vector<P2pOp>& ops) override { everyone_->sendRecv(ops); }
  // Reached only by a call that skipped the comparison (which, done, waited for every rank and completed it).
  void doBarrier() override {
    everyone([&] { everyone_->barrier(); });
  }

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

  bool abandonedByPeer() const override {
    return inHost_->abandonedByPeer() || acrossHosts_->abandonedByPeer() || everyone_->abandonedByPeer();
  }

 private:
  // A part's error, with its rank numbers told in this communicator's.
  template <typename F>
  void inHost(F&& f) {
    withNote(inHostNote_, std::forward<F>(f));
  }
  // Its calls skip their own comparison: this communicator compared every rank's call first (checkAndComplete).
  // A failure there is passed on to this host's other ranks, which may be waiting for this one in the part within
  // the host (their own part between hosts finished): they raise at once naming the lost host, not this rank
  // after the timeout.
  template <typename F>
  void acrossHosts(F&& f) {
    const Communicator::Trusted compared(*acrossHosts_);
    try {
      withNote(acrossNote_, std::forward<F>(f));
    } catch (const StatusError& e) {
      inHost_->abortPeers(e.what_without_backtrace());
      throw;
    }
  }
  template <typename F>
  void everyone(F&& f) {
    const Communicator::Trusted compared(*everyone_);
    f();
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

  // Every rank's call, compared over all ranks in two exchanges of a fixed size whatever the call (so ranks that
  // called different things still exchange matching messages, and all raise): each rank's record (its signature,
  // then `room` bytes where a small call's data rides) is gathered in the host over shared memory, then each rank
  // sends its host's gather to the rank of its local index on every other host. Every rank then holds every rank's
  // record and raises the same error, or finishes a small call from them. One exchange between hosts of 2 ranks (4
  // with 2 x 2 on one gloo group, 2-3 ms on the emulated hosts, was the cost of every sharded all-reduce from 64 KiB).
  // Beside its host's gather, each rank's message to a host carries a room learned from the calls before
  // (acrossRoom_) where a repeated all-to-all's chunks for that host ride, as alltoallvByHosts would send them: the
  // call then crosses the link once instead of twice (rodeBytes_). Chunks that outgrow the room fill it, and only
  // their rest crosses after the comparison.
  EagerResult compareInTwoSteps(const CallSignature& sig, const AllToAllVLayout* counts, const EagerCall* call) {
    const int32_t n = size();
    const int32_t me = rank();
    const int32_t hosts = layout_.hosts();
    const int32_t here = layout_.host;
    // The usual room only in the records: each local index carries its whole host's records to the other hosts, so
    // data riding there costs the link perHost times a call's bytes (2 x 2 at 10 Gbit/s: a 1 MiB all-to-all took
    // 4.9 ms in records of 768 KiB against 3.2 ms by hosts). A rank's own chunks for a host ride beside them.
    const int64_t room = eagerRoom(n);
    // [call header | room], a multiple of 8 bytes, so the chunks that ride after the records lie aligned for any
    // element type.
    const int64_t header = callHeaderBytes(n);
    const int64_t record = (header + room + 7) / 8 * 8;
    at::Tensor mine = at::zeros({record}, at::kByte);
    auto* m = static_cast<char*>(mine.data_ptr());
    writeCallHeader(sig, counts, n, m);
    if (call != nullptr) packEager(*call, me, room, m + header);
    hostRecords_ = at::empty({layout_.perHost() * record}, at::kByte);
    const ReplacedCallLabel sameOnEveryRank("two-level call comparison");  // shm compares labels in its post
    inHost([&] { inHost_->allgather(mine, hostRecords_); });

    const int64_t ride = acrossRoom_.room();
    const int64_t hostBytes = hostRecords_.numel();
    const int64_t block = hostBytes + ride;
    AllToAllVLayout blocks = emptyLayout(hosts);
    at::Tensor out = at::empty({(hosts - 1) * block}, at::kByte);
    auto* o = static_cast<char*>(out.data_ptr());
    for (int32_t h = 0, slot = 0; h < hosts; ++h) {
      if (h == here) continue;
      blocks.sendCounts[h] = blocks.recvCounts[h] = block;
      blocks.sdispls[h] = blocks.rdispls[h] = slot * block;
      char* dst = o + slot++ * block;
      std::memcpy(dst, hostRecords_.data_ptr(), static_cast<size_t>(hostBytes));
      const int64_t packed = call != nullptr ? packForHost(*call, h, ride, dst + hostBytes) : 0;
      std::memset(dst + hostBytes + packed, 0, static_cast<size_t>(ride - packed));  // nothing of this process leaks
    }
    acrossRecords_ = at::empty({(hosts - 1) * block}, at::kByte);
    acrossHosts([&] { acrossHosts_->alltoallv(out, blocks, acrossRecords_); });
    recordAt_.assign(static_cast<size_t>(n), nullptr);
    for (int32_t h = 0; h < hosts; ++h) {
      const char* base = h == here ? static_cast<const char*>(hostRecords_.data_ptr())
                                   : static_cast<const char*>(acrossRecords_.data_ptr()) + blocks.rdispls[h];
      for (int32_t l = 0; l < layout_.perHost(); ++l) recordAt_[layout_.ranks[h][l]] = base + l * record;
    }

    // The same prefix on every rank, whatever each called, so all raise one message.
    checkCallHeaders(
        n, [this](int32_t r) { return recordOf(r); }, counts != nullptr,
        backend() + " call #" + std::to_string(sig.seq));
    countsCompared_ = counts != nullptr;
    rodeBytes_ = 0;
    // Decided alike on every rank, from what all agreed on (the signatures, the count matrix).
    bool fits = call != nullptr && eagerFits(sig, call->kind, room);
    int64_t acrossNeed = 0;  // the room this call's chunks for another host would have taken (0: none ride)
    if (call != nullptr && call->kind == Collective::kAlltoallv) {
      fits = true;
      for (int32_t r = 0; r < n && fits; ++r) fits = toOthers(r) * sig.elemSize <= room;
      if (!fits && mostToOtherHosts(sig.elemSize) <= kByHostsMaxBytes) {
        acrossNeed = mostToOneHost(sig.elemSize);
        // Every sender packed the first `ride` bytes of its chunks for each host (all of them where they fit), the
        // same room on every rank; whole elements, where the records' sizes keep them aligned.
        rodeBytes_ = record % sig.elemSize == 0 && block % sig.elemSize == 0 ? ride : 0;
        rodeAt_ = blocks.rdispls;
        for (int64_t& at : rodeAt_) at += hostBytes;
      }
    }
    acrossRoom_.learn(signatureDigest(sig), acrossNeed);
    if (call == nullptr) return EagerResult::kChecked;
    if (!fits) return EagerResult::kChecked;
    auto payload = [&](int32_t r) -> const char* {
      const char* data = recordOf(r) + header;
      if (call->kind != Collective::kAlltoallv) return data;
      // Rank r's chunks to the ranks before this one, its own excluded, come first.
      int64_t before = 0;
      for (int32_t p = 0; p < me; ++p) before += p == r ? 0 : comparedCount(r, p);
      return data + before * sig.elemSize;
    };
    countsCompared_ = false;  // done here: no data left to route
    const int64_t moved = completeFromPayloads(*call, me, n, payload);
    stats_.eagerBytes.fetch_add(static_cast<uint64_t>(moved), std::memory_order_relaxed);
    return EagerResult::kCompleted;
  }

  // This rank's chunks of an all-to-all for host h's ranks, back to back in local order (as alltoallvByHosts sends
  // them between hosts), into `out`: as many of their first bytes as fit `ride`. Returns the bytes written.
  int64_t packForHost(const EagerCall& call, int32_t h, int64_t ride, char* out) const {
    if (call.kind != Collective::kAlltoallv) return 0;
    const AllToAllVLayout& l = *call.layout;
    const int64_t es = call.send->element_size();
    const auto* src = static_cast<const char*>(call.send->data_ptr());
    int64_t written = 0;
    for (int32_t r : layout_.ranks[h]) {
      const int64_t n = std::min(l.sendCounts[r] * es, ride - written);
      std::memcpy(out + written, src + l.sdispls[r] * es, static_cast<size_t>(n));
      written += n;
    }
    return written;
  }

  // Rank r's record in this call's comparison, and its send count to rank p there.
  const char* recordOf(int32_t r) const { return recordAt_[r]; }
  int64_t comparedCount(int32_t r, int32_t p) const { return headerCount(recordOf(r), p); }

  // Elements rank r sends to the ranks of host h, from the compared counts.
  int64_t toHost(int32_t r, int32_t h) const {
    int64_t total = 0;
    for (int32_t p : layout_.ranks[h]) total += comparedCount(r, p);
    return total;
  }

  // The most bytes any rank sends to the ranks of any one other host, from the compared counts.
  int64_t mostToOneHost(int64_t elemSize) const {
    int64_t most = 0;
    for (int32_t h = 0; h < layout_.hosts(); ++h) {
      for (int32_t r : layout_.ranks[h]) {
        for (int32_t other = 0; other < layout_.hosts(); ++other) {
          if (other != h) most = std::max(most, toHost(r, other) * elemSize);
        }
      }
    }
    return most;
  }

  // The most bytes any rank sends to ranks on other hosts, from the compared counts.
  int64_t mostToOtherHosts(int64_t elemSize) const {
    int64_t most = 0;
    for (int32_t h = 0; h < layout_.hosts(); ++h) {
      for (int32_t r : layout_.ranks[h]) {
        int64_t away = 0;
        for (int32_t other = 0; other < layout_.hosts(); ++other) away += other == h ? 0 : toHost(r, other);
        most = std::max(most, away * elemSize);
      }
    }
    return most;
  }

  // An all-to-all where each rank's data for another host crosses the link in one message per host pair and local
  // index: rank (h, l) sends rank (h', l) all of its chunks for host h', which (h', l) hands on to their receivers in
  // its host over shared memory, as the chunks between ranks of one host go. Every rank then talks to hosts - 1
  // peers over the link instead of ranks - local ranks (2 x 2: one TCP peer, not three), and no chunk between ranks
  // of a host touches the network. The routing uses every rank's counts, which the comparison carried.
  void alltoallvByHosts(const at::Tensor& send, const AllToAllVLayout& l, at::Tensor& recv, int64_t rode) {
    const int32_t hosts = layout_.hosts();
    const int32_t perHost = layout_.perHost();
    const int32_t here = layout_.host;
    const int32_t me = layout_.local;
    const auto rankAt = [&](int32_t h, int32_t local) { return layout_.ranks[h][local]; };

    // 1. Within the host: this rank's own chunks to its host's ranks.
    AllToAllVLayout own = emptyLayout(perHost);
    for (int32_t k = 0; k < perHost; ++k) {
      const int32_t r = rankAt(here, k);
      own.sendCounts[k] = l.sendCounts[r];
      own.sdispls[k] = l.sdispls[r];
      own.recvCounts[k] = l.recvCounts[r];
      own.rdispls[k] = l.rdispls[r];
    }
    inHost([&] { inHost_->alltoallv(send, own, recv); });

    // 2. Between hosts, among the ranks of this local index: to host h', this rank's chunks for h''s ranks in
    // local order; from host h', rank (h', me)'s chunks for this host's ranks, kept host by host. Where they rode in
    // the comparison (`rode` bytes of each sender's for a host), they, or their first elements, are already here.
    // incoming: [host h'][local k] rank (h', me)'s chunk for rank (here, k), from inAt[h' * perHost + k].
    std::vector<int64_t> inAt(static_cast<size_t>(hosts) * perHost, 0);
    int64_t arriving = 0;
    for (int32_t h = 0; h < hosts; ++h) {
      for (int32_t k = 0; k < perHost && h != here; ++k) {
        inAt[static_cast<size_t>(h) * perHost + k] = arriving;
        arriving += comparedCount(rankAt(h, me), rankAt(here, k));
      }
    }
    // What rode: the first `ridden` elements of each sender's chunks for a host. The rest, where any rank of this
    // local index has more for some host (decided alike by all of them, from the compared counts), crosses now.
    const int64_t es = send.element_size();
    const int64_t ridden = rode / es;
    const auto rodeFrom = [&](int32_t h) { return h == here ? 0 : std::min(toHost(rankAt(h, me), here), ridden); };
    bool rest = false;
    for (int32_t from = 0; from < hosts; ++from) {
      for (int32_t to = 0; to < hosts; ++to) rest = rest || (to != from && toHost(rankAt(from, me), to) > ridden);
    }
    at::Tensor incoming;
    if (rode > 0 && !rest) {
      incoming = acrossRecords_.view(send.scalar_type());
      for (int32_t h = 0; h < hosts; ++h) {
        int64_t at = rodeAt_[h] / es;
        for (int32_t k = 0; k < perHost && h != here; ++k) {
          inAt[static_cast<size_t>(h) * perHost + k] = at;
          at += comparedCount(rankAt(h, me), rankAt(here, k));
        }
      }
    } else {
      incoming = at::empty({arriving}, send.options());
      if (rode > 0) {
        const at::Tensor records = acrossRecords_.view(send.scalar_type());
        for (int32_t h = 0; h < hosts; ++h) {
          if (rodeFrom(h) == 0) continue;
          copyContiguous(incoming.narrow(0, inAt[static_cast<size_t>(h) * perHost], rodeFrom(h)),
                         records.narrow(0, rodeAt_[h] / es, rodeFrom(h)));
        }
      }
      sendToHosts(send, l, incoming, inAt, ridden);
    }
    int64_t came = 0;
    for (int32_t h = 0; h < hosts; ++h) came += rodeFrom(h);
    stats_.eagerBytes.fetch_add(static_cast<uint64_t>(came * es), std::memory_order_relaxed);

    // 3. Within the host again: the chunks from (h', me) go to their receivers (here, k), which take rank
    // (h', k)'s chunks from this host's rank k. With two hosts each is one piece, in place at both ends.
    AllToAllVLayout onward = emptyLayout(perHost);
    const bool twoHosts = hosts == 2;
    at::Tensor forward = incoming;
    at::Tensor landing = recv.view({-1});
    if (twoHosts) {
      const int32_t other = 1 - here;
      for (int32_t k = 0; k < perHost; ++k) {
        onward.sendCounts[k] = comparedCount(rankAt(other, me), rankAt(here, k));
        onward.sdispls[k] = inAt[static_cast<size_t>(other) * perHost + k];
        onward.recvCounts[k] = l.recvCounts[rankAt(other, k)];
        onward.rdispls[k] = l.rdispls[rankAt(other, k)];
      }
    } else {
      // [local k][host h'] on both sides: the pieces for (or from) one rank back to back.
      forward = at::empty({arriving}, send.options());
      int64_t at = 0;
      for (int32_t k = 0; k < perHost; ++k) {
        onward.sdispls[k] = at;
        for (int32_t h = 0; h < hosts; ++h) {
          if (h == here) continue;
          const int64_t n = comparedCount(rankAt(h, me), rankAt(here, k));
          copyContiguous(forward.narrow(0, at, n), incoming.narrow(0, inAt[static_cast<size_t>(h) * perHost + k], n));
          at += n;
        }
        onward.sendCounts[k] = at - onward.sdispls[k];
      }
      int64_t total = 0;
      for (int32_t k = 0; k < perHost; ++k) {
        onward.rdispls[k] = total;
        for (int32_t h = 0; h < hosts; ++h) total += h == here ? 0 : l.recvCounts[rankAt(h, k)];
        onward.recvCounts[k] = total - onward.rdispls[k];
      }
      landing = at::empty({total}, recv.options());
    }
    inHost([&] { inHost_->alltoallv(forward, onward, landing); });
    if (twoHosts) return;
    at::Tensor out = recv.view({-1});
    for (int32_t k = 0; k < perHost; ++k) {
      int64_t at = onward.rdispls[k];
      for (int32_t h = 0; h < hosts; ++h) {
        if (h == here) continue;
        const int32_t r = rankAt(h, k);
        copyContiguous(out.narrow(0, l.rdispls[r], l.recvCounts[r]), landing.narrow(0, at, l.recvCounts[r]));
        at += l.recvCounts[r];
      }
    }
  }

  // alltoallvByHosts' step between hosts, for what did not ride in the comparison (all but the first `ridden`
  // elements of each rank's chunks for a host): this rank's chunks for each other host to the rank of its local
  // index there, whose chunks for this host's ranks land in `incoming` at inAt[h' * perHost + k] (host by host,
  // local index by local index).
  void sendToHosts(const at::Tensor& send, const AllToAllVLayout& l, at::Tensor& incoming,
                   const std::vector<int64_t>& inAt, int64_t ridden) {
    const int32_t hosts = layout_.hosts();
    const int32_t perHost = layout_.perHost();
    const int32_t here = layout_.host;
    const auto rankAt = [&](int32_t h, int32_t local) { return layout_.ranks[h][local]; };
    AllToAllVLayout across = emptyLayout(hosts);
    bool inPlace = true;  // this rank's chunks for each host lie back to back in local order in its input
    for (int32_t h = 0; h < hosts && inPlace; ++h) {
      if (h == here) continue;
      for (int32_t k = 1; k < perHost; ++k) {
        inPlace = inPlace && l.sdispls[rankAt(h, k)] == l.sdispls[rankAt(h, k - 1)] + l.sendCounts[rankAt(h, k - 1)];
      }
    }
    int64_t packed = 0;
    for (int32_t h = 0; h < hosts; ++h) {
      if (h == here) continue;
      int64_t total = 0;
      for (int32_t k = 0; k < perHost; ++k) total += l.sendCounts[rankAt(h, k)];
      const int64_t skip = std::min(total, ridden);
      across.sendCounts[h] = total - skip;
      across.sdispls[h] = (inPlace ? l.sdispls[rankAt(h, 0)] : packed) + skip;
      packed += total;
      const int64_t arriving = toHost(rankAt(h, layout_.local), here);
      const int64_t came = std::min(arriving, ridden);
      across.recvCounts[h] = arriving - came;
      across.rdispls[h] = inAt[static_cast<size_t>(h) * perHost] + came;
    }
    at::Tensor outgoing = send.view({-1});
    if (!inPlace) {
      outgoing = at::empty({packed}, send.options());
      int64_t at = 0;
      for (int32_t h = 0; h < hosts; ++h) {
        for (int32_t k = 0; k < perHost && h != here; ++k) {
          const int32_t r = rankAt(h, k);
          copyContiguous(outgoing.narrow(0, at, l.sendCounts[r]),
                         send.view({-1}).narrow(0, l.sdispls[r], l.sendCounts[r]));
          at += l.sendCounts[r];
        }
      }
    }
    acrossHosts([&] { acrossHosts_->alltoallv(outgoing, across, incoming); });
  }

  static AllToAllVLayout emptyLayout(int32_t n) {
    const std::vector<int64_t> zeros(static_cast<size_t>(n), 0);
    return AllToAllVLayout{zeros, zeros, zeros, zeros};
  }

  // Elements rank r sends to every rank but itself, from the compared counts.
  int64_t toOthers(int32_t r) const {
    int64_t total = 0;
    for (int32_t p = 0; p < size(); ++p) total += p == r ? 0 : comparedCount(r, p);
    return total;
  }

  // This rank's data for the others into its record's room, where it fits: an all-to-all's chunks for every
  // other rank back to back in rank order; an all-gather's or all-reduce's input, a broadcast root's tensor, once
  // (every rank reads the same).
  static void packEager(const EagerCall& call, int32_t me, int64_t room, char* out) {
    if (call.kind == Collective::kAlltoallv) {
      const AllToAllVLayout& l = *call.layout;
      const int64_t es = call.send->element_size();
      if ((l.totalSend() - l.sendCounts[me]) * es > room) return;
      const auto* src = static_cast<const char*>(call.send->data_ptr());
      for (size_t p = 0; p < l.sendCounts.size(); ++p) {
        if (static_cast<int32_t>(p) == me || l.sendCounts[p] == 0) continue;
        std::memcpy(out, src + l.sdispls[p] * es, static_cast<size_t>(l.sendCounts[p] * es));
        out += l.sendCounts[p] * es;
      }
      return;
    }
    const int64_t bytes = eagerBytes(call, me, me, room);
    if (bytes > 0) std::memcpy(out, call.send->data_ptr(), static_cast<size_t>(bytes));
  }

  HostLayout layout_;
  // The last comparison: this host's records, the other hosts' messages (their hosts' records, then the chunks that
  // rode for this rank), and where each rank's record lies in them. countsCompared_: they hold an all-to-all's
  // counts whose data are still to be routed; rodeBytes_: the first that many bytes of each sender's chunks for a
  // host came with them (0: none), host h's from byte rodeAt_[h] of acrossRecords_.
  at::Tensor hostRecords_;
  at::Tensor acrossRecords_;
  std::vector<const char*> recordAt_;
  int64_t rodeBytes_ = 0;
  std::vector<int64_t> rodeAt_;
  // The room per other host for a rank's chunks beside its host's records: none, or what repeated all-to-alls
  // routed by hosts were seen to need (up to kByHostsMaxBytes, which they never pass), learned alike on every rank.
  LearnedRoom acrossRoom_{1, kByHostsMaxBytes};
  bool countsCompared_ = false;
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
