#include "comm/gloo/gloo_communicator.h"

#include <ATen/ops/empty.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "comm/backend_registry.h"
#include "comm/bootstrap/bootstrap.h"
#include "comm/bootstrap/job_scope.h"
#include "comm/bootstrap/private_dir.h"
#include "comm/bootstrap/store_bootstrap.h"
#include "comm/bootstrap/tcp_store.h"
#include "comm/eager_completion.h"
#include "comm/gloo/existing_group.h"
#include "core/host.h"
#include "core/interrupt.h"
#include "core/layout.h"
#include "core/memory.h"
#include "core/process.h"
#include "core/reduce.h"
#include "core/status.h"
#include "core/tensor_checks.h"

namespace atb_ops::gloo {
namespace {

// An all-reduce whose input, once to each peer, is at most this many bytes is one exchange (doAllreduce): where the
// ranks span hosts, a round costs the link's latency; on one host gloo's ring catches up sooner (2 ranks on
// loopback: even at 512 KiB, 0.58x at 2 MiB; 4 ranks: 0.74x at 3 x 512 KiB).
constexpr int64_t kExchangeAllreduceAcrossHosts = int64_t{2} << 20;
constexpr int64_t kExchangeAllreduceOneHost = int64_t{512} << 10;
// Two ranks on two hosts: up to 4 MiB, so a repeated 4 MiB all-reduce rides in its comparison (one round of 4 MiB each
// way, the ring's bytes). Bench, 2 hosts x 1 rank at 10 Gbit/s, medians of 5, ratio to gloo's all_reduce in the same
// run: 4 MiB 0.87-0.97x in six runs against 0.74-0.77x in four with 2 MiB; 8 MiB (no riding) unchanged. The round it
// saves costs more than its latency on the emulated hosts: a small all_to_all_single between two of torch's 4 MiB
// all_reduce calls adds 1.5 ms with ranks pinned to a core each (0.4 ms unpinned).
constexpr int64_t kExchangeAllreduceTwoHosts = int64_t{4} << 20;

// All-to-all and all-gather messages of this many bytes or more move by send/recv in pieces (messagePieces). On one
// connection between hosts: pieces of at most kPieceBytes from kPiecesMinBytes. Sent both ways at once, one large
// message is slow on a connection: gloo send + recv between 2 emulated hosts at 10 Gbit/s, medians of 6-10, share of
// the link: 4 MiB as one message 0.54, as two 2 MiB pieces posted together 0.78-0.80; 16 MiB as one 0.49, as 2 or 4 MiB
// pieces 0.75-0.77; 32 MiB as one 0.48, as 1-4 MiB pieces 0.70-0.79; but 2 MiB as one 0.71 against four 512 KiB pieces
// 0.56 (each piece a round trip more); one way alone 0.89-0.95. atb_ops.quant's all-reduce of 64 MiB on 2 hosts x 1
// rank (one connection), phases timed per call, one build alternating 3 runs each: its 16 MiB all-gather 24.9-29.3 ms
// in 2 MiB pieces against 26.1-33.2 through gloo's all-to-all (the call 45.0-50.5 against 50.2-60.0 ms), 26.7 in 4 MiB
// pieces, 39.3 as one send/recv; its 4 MiB all-gather at 16 MiB: 7.9-8.7 against 7.6-8.8 ms (no change). Within one
// host messages stay whole: over loopback (2 ranks, medians of 15) 4 MiB took 2.7-3.1 ms as one message against
// 3.7-4.4 in 2 MiB pieces, and the bench's 16 MiB all-to-all on backend "gloo" 8.2-8.5 ms in pieces against
// 7.5-7.7 without.
constexpr int64_t kPiecesMinBytes = int64_t{4} << 20;
constexpr int64_t kPieceBytes = int64_t{2} << 20;
// Over several streams (extraStreamsFor): one piece per stream from this many bytes. 2 emulated hosts x 1 rank, 10
// Gbit/s, one stream carries ~7.9 Gbit/s one way: a 64 MiB all-to-all took 35.8 ms on two streams against 54.4 on one,
// 16 MiB 11.6 against 12.9. Smaller pieces did worse there (bench, medians of 3 in one session, 2 MiB pieces from 4 MiB
// against one per stream from 8 MiB: 8 MiB 7.3 against 6.1 ms, 64 MiB 45.1 against 42.1 ms), as did one piece per
// stream from 4 MiB (8 MiB 7.2 ms).
constexpr int64_t kStreamsMinBytes = int64_t{8} << 20;
// The most bytes (over its peers) a rank's comparison carries for calls learned to fit (LearnedRoom): a repeated call
// up to this size is done in its comparison, one round instead of two. 2 hosts x 1 rank, 10 Gbit/s: a round is
// 0.6-1 ms there, while 2 MiB more on the link cost 1.7 ms only when a call that fits is followed by one that does not.
// All-reduces learn up to their one-exchange size instead (4 MiB for two ranks on two hosts). Data that is only moved
// stays at this: an all-to-all of 4 MiB per peer rode at 0.76-0.80x gloo against 0.87-0.91x in two rounds (its
// chunks are copied into the comparison and out of it).
constexpr int64_t kLearnedRoomMaxBytes = int64_t{2} << 20;

// The pieces of large all-to-all and all-gather messages (exchangeInPieces): a tag of their own, apart from
// send/recv's 0. On a caller's group (atb_ops.distributed) the caller may send and receive on it too, so not a small
// number a program would pick: "ATB" and 1.
constexpr int kStreamsTag = 0x41544201;
// A batch of sends and receives (doSendRecv): what goes from sender to receiver, and the receiver's header back.
constexpr int kBatchForwardTag = 0x41544202;
constexpr int kBatchBackTag = 0x41544203;
// The pairwise all-reduce's two halves (allreducePairwise): what goes to be reduced, and what comes back reduced.
constexpr int kReduceTag = 2;
constexpr int kGatherTag = 3;
// How often a wait on a collective looks for Ctrl-C (waitFor).
constexpr std::chrono::milliseconds kInterruptSlice{200};
// Two ranks of an own group all-reduce from this many bytes pairwise (allreducePairwise) rather than by gloo's ring
// on a copy. Bench, AllReduce float32, medians of 5 rounds, ratio to torch's gloo all_reduce in the same run, pairwise
// against the ring: 2 emulated hosts x 1 rank at 10 Gbit/s, 16 MiB 0.98x against 0.88x, 64 MiB 1.17x against 0.88x
// (63 ms: 0.85 of the link), but 4 MiB 0.69x against 0.71-0.77x and 8 MiB 0.76x against 0.86x; 2 ranks on one host,
// 16 MiB 0.92x against 0.77x, 64 MiB 1.18x against 0.77x, 4 MiB 0.64x against 0.72x.
constexpr int64_t kPairwiseAllreduceMinBytes = int64_t{16} << 20;
// allreducePairwise moves each half in pieces of this size, so the peer reduces one piece while the next travels
// and sends it back reduced while later pieces still arrive (256 KiB and 4 MiB pieces were no faster).
constexpr int64_t kPairPieceBytes = int64_t{1} << 20;

// A flat byte view of a contiguous tensor: gloo then needs no per-dtype support.
at::Tensor bytesOf(const at::Tensor& t) {
  return flatElements(t).view(at::kByte);
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
  static const int64_t hash = static_cast<int64_t>(fnv1a(hostIdentity(readOptions())) >> 1);
  return hash;
}

c10d::ReduceOp toC10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return c10d::ReduceOp(c10d::ReduceOp::SUM);
    case ReduceOp::kProd: return c10d::ReduceOp(c10d::ReduceOp::PRODUCT);
    case ReduceOp::kMax: return c10d::ReduceOp(c10d::ReduceOp::MAX);
    case ReduceOp::kMin: return c10d::ReduceOp(c10d::ReduceOp::MIN);
  }
  return c10d::ReduceOp(c10d::ReduceOp::SUM);
}

// gloo reduces these dtypes natively (16-bit floats are widened to float32 first, see doAllreduce).
bool glooReduces(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kChar || t == at::kByte || t == at::kInt || t == at::kLong;
}

std::mutex& factoryMutex() {
  static std::mutex m;
  return m;
}

GlooFactory& factory() {
  static auto* f = new GlooFactory();  // outlives static teardown, like the communicator cache
  return *f;
}

// One group more per extra stream: its own sockets between every pair of ranks. Worth it where a pair of hosts has
// no other connection between them: atb_ops' own group whose hosts hold one rank each (two levels' parts have one
// per local index already; a caller's group is the caller's).
int32_t extraStreamsFor(const CommConfig& c) {
  if (c.group || c.rankHosts.size() < 2) return 0;
  const std::set<std::string> hosts(c.rankHosts.begin(), c.rankHosts.end());
  return hosts.size() == c.rankHosts.size() ? static_cast<int32_t>(c.options.glooStreams) - 1 : 0;
}

bool launcherAddressGiven() {
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  return addr != nullptr && *addr != '\0' && port != nullptr && *port != '\0';
}

// Where nothing names a store (no torch.distributed, no MASTER_ADDR/MASTER_PORT, no root info or rank table), the
// ranks meet as shm's do, through the node-local rendezvous of their job and commDomain: rankRoot hands the port of
// the store its process serves (processStore) and the group's token to the others.
c10::intrusive_ptr<c10d::Store> nodeLocalStore(const CommConfig& c, std::string& token) {
  const std::unique_ptr<Bootstrap> bootstrap = makeBootstrap(c, "gloo");
  c10::intrusive_ptr<c10d::Store> served;
  std::string mine;
  if (c.rank == c.rankRoot) {
    uint16_t port = 0;
    try {
      served = processStore(c.options.timeout.value, &port);
    } catch (const c10::Error& e) {
      bootstrap->fail(e.what_without_backtrace());
      throw;
    }
    mine = std::to_string(port) + "|" + randomToken();
  }
  const std::string got = bootstrap->broadcast(mine);
  const size_t bar = got.find('|');
  char* end = nullptr;
  const long port = bar == std::string::npos ? 0 : std::strtol(got.c_str(), &end, 10);
  ATB_CHECK(port > 0 && port <= 65535 && end == got.c_str() + bar, ERROR_RT_FAIL, "backend 'gloo': the node-local ",
            "rendezvous of commDomain '", c.commDomain, "' delivered '", got.substr(0, 64), "', not a port and token");
  token = got.substr(bar + 1);
  return served ? served : joinStore("127.0.0.1", static_cast<uint16_t>(port), c.options.timeout);
}

c10::intrusive_ptr<c10d::Backend> ownGlooGroup(const CommConfig& c, std::string& name,
                                               std::vector<c10::intrusive_ptr<c10d::Backend>>& extraStreams,
                                               c10::intrusive_ptr<c10d::Store>& notes) {
  GlooFactory make;
  {
    std::lock_guard<std::mutex> lock(factoryMutex());
    make = factory();
  }
  name = "commDomain '" + c.commDomain + "'";
  ATB_CHECK(make, ERROR_COMM_EMPTY, "backend 'gloo' (and CPU ranks on several hosts, which move data with it) needs ",
            "the atb_ops Python package in this process (import atb_ops): torch's gloo can only be built through ",
            "its Python binding, and a C program has none; keep such a program's ranks on one host, or drive it from "
            "Python");
  // The group's keys are named by a token of the root's, handed to the others through the store: a
  // re-creation never meets an earlier one's keys, whenever each rank's earlier communicator went. The store is
  // the one this communicator was given (HCCL root info, a rank table), else the job's.
  c10::intrusive_ptr<c10d::Store> store = c.store ? c.store->store : c10::intrusive_ptr<c10d::Store>();
  std::string token;
  if (!store && !jobStore() && !launcherAddressGiven()) {
    store = nodeLocalStore(c, token);
  } else {
    if (!store) jobStore(StoreRequest{true, c.rank, c.rankSize, c.options.timeout.value});
    const std::unique_ptr<Bootstrap> bootstrap = makeBootstrap(c, "gloo");
    token = bootstrap->broadcast(c.rank == c.rankRoot ? randomToken() : "");
  }
  const std::string prefix = "atb_ops/gloo/" + c.commDomain + "/" + token;
  c10::intrusive_ptr<c10d::Backend> first = make(prefix, c.rank, c.rankSize, c.options.timeout.value, store);
  if (c10::intrusive_ptr<c10d::Store> base = store ? store : jobStore()) {
    notes = c10::make_intrusive<c10d::PrefixStore>(prefix + "/notes", std::move(base));
  }
  const int32_t extra = extraStreamsFor(c);
  for (int32_t s = 1; s <= extra; ++s) {
    extraStreams.push_back(
        make(prefix + "/stream" + std::to_string(s), c.rank, c.rankSize, c.options.timeout.value, store));
  }
  return first;
}

}  // namespace

GlooCommunicator::GlooCommunicator(const CommConfig& c)
    : Communicator("gloo", c.rank, c.rankSize, c.options), wholeRanks_(c.wholeRanks) {
  ATB_CHECK(c.handle == 0, ERROR_INVALID_PARAM, "backend 'gloo' takes no hcclComm handle, got ", c.handle);
  ATB_CHECK(wholeRanks_.empty() || static_cast<int32_t>(wholeRanks_.size()) == c.rankSize, ERROR_INVALID_PARAM,
            "backend 'gloo': ", wholeRanks_.size(), " whole-communicator ranks for a part of ", c.rankSize);
  if (c.group) {
    group_ = c.group->group;
    name_ = "group '" + group_->getGroupName() + "'";
    ATB_CHECK(group_->getRank() == c.rank && group_->getSize() == c.rankSize, ERROR_INVALID_PARAM,
              "backend 'gloo': ", name_, " has rank ", group_->getRank(), " of size ", group_->getSize(), " but rank ",
              c.rank, " of rankSize ", c.rankSize, " was asked for");
    backend_ = group_->getBackend(c10::DeviceType::CPU);
  } else {
    backend_ = ownGlooGroup(c, name_, extraStreams_, notes_);
  }
  // Who is who: lets a failed wait name the peer that died, or the host it lost (gloo reports only addresses).
  constexpr int64_t kNameWords = 8;  // 64 bytes of the host's name
  constexpr int64_t kWords = 2 + kNameWords;
  at::Tensor mine = at::zeros({kWords}, at::kLong);
  auto* m = mine.data_ptr<int64_t>();
  m[0] = hostHash();
  m[1] = static_cast<int64_t>(::getpid());
  const std::string host = hostName();
  std::memcpy(m + 2, host.data(), std::min<size_t>(host.size(), kNameWords * sizeof(int64_t) - 1));
  at::Tensor all = at::empty({kWords * size()}, at::kLong);
  waitFor(backend_->_allgather_base(all, mine), "identity exchange");
  const int64_t* a = all.data_ptr<int64_t>();
  for (int64_t r = 0; r < size(); ++r) {
    peerHosts_.push_back(a[kWords * r]);
    peerPids_.push_back(a[kWords * r + 1]);
    const char* name = reinterpret_cast<const char*>(a + kWords * r + 2);
    peerHostNames_.emplace_back(name, strnlen(name, kNameWords * sizeof(int64_t)));
  }
  // The same on every rank: each sees another host exactly when the ranks span several.
  const bool acrossHosts = std::any_of(peerHosts_.begin(), peerHosts_.end(), [&](int64_t h) { return h != m[0]; });
  acrossHosts_ = acrossHosts;
  exchangeAllreduceBytes_ = !acrossHosts  ? kExchangeAllreduceOneHost
                            : size() == 2 ? kExchangeAllreduceTwoHosts
                                          : kExchangeAllreduceAcrossHosts;
  const int64_t peers = std::max(size() - 1, 1);
  movedRoomMost_ = kLearnedRoomMaxBytes / peers;
  room_ = LearnedRoom(size(), std::max(movedRoomMost_, exchangeAllreduceBytes_ / peers));
}

GlooCommunicator::~GlooCommunicator() {
  // A gloo group whose peers vanished can block its destructor on work that never completes: a failed
  // one is left to the process's end instead of hanging it.
  if (failed()) {
    backend_.release();
    for (auto& stream : extraStreams_) stream.release();
  }
}

std::string GlooCommunicator::deadPeers() const {
  std::string dead;
  const int64_t here = hostHash();
  for (size_t r = 0; r < peerPids_.size(); ++r) {
    if (peerHosts_[r] == here && !processAlive(static_cast<pid_t>(peerPids_[r]))) {
      dead += (dead.empty() ? "" : ", ") + std::string("rank ") + std::to_string(shown(r)) + " (pid " +
              std::to_string(peerPids_[r]) + ")";
    }
  }
  return dead;
}

std::string GlooCommunicator::remotePeers() const {
  const int64_t here = hostHash();
  std::vector<std::string> remote;  // by the number messages give each rank
  for (size_t r = 0; r < peerHosts_.size(); ++r) {
    const size_t at = static_cast<size_t>(shown(r));
    if (remote.size() <= at) remote.resize(at + 1);
    if (peerHosts_[r] != here) remote[at] = peerHostNames_[r];
  }
  return formatRanksByLabel(remote);
}

void GlooCommunicator::abortPeers(const std::string& reason) {
  leaveNote(reason);
}

void GlooCommunicator::leaveNote(const std::string& reason) const {
  // Only where every peer is on this host: across hosts the store may live on the host that was lost, where a
  // request waits out the store's timeout (30 minutes for torch's default group), and this rank's error must not.
  if (!notes_ || acrossHosts_) return;
  const std::string note = std::to_string(shown(rank())) + "|" + reason;
  try {
    notes_->compareSet("abandoned", {}, std::vector<uint8_t>(note.begin(), note.end()));  // the first reason stays
  } catch (const std::exception&) {
    // The store went too: the peers' next call finds the fault itself.
  }
}

std::string GlooCommunicator::peerNote() const {
  // Notes are left only where every peer is on this host (leaveNote), and across hosts asking the store could hold
  // this rank for the store's timeout where its host was lost: an error's message, or the next operation's lookup.
  if (!notes_ || acrossHosts_ || !notes_->check({"abandoned"})) return "";
  const std::vector<uint8_t> note = notes_->get("abandoned");
  std::string text(note.begin(), note.end());
  const size_t bar = text.find('|');
  if (bar == std::string::npos || text.compare(0, bar, std::to_string(shown(rank()))) == 0) return "";
  return "rank " + text.substr(0, bar) + " gave up on this communicator: " + text.substr(bar + 1);
}

bool GlooCommunicator::abandonedByPeer() const {
  try {
    return !peerNote().empty();
  } catch (const std::exception&) {
    return true;  // the store the group met on is gone: so is at least one of its ranks
  }
}

void GlooCommunicator::waitFor(const c10::intrusive_ptr<c10d::Work>& work, const char* what, WorkKind kind) const {
  const auto deadline = std::chrono::steady_clock::now() + options().timeout.value - options().timeout.early;
  std::string error;
  while (true) {
    // A collective runs on gloo's threads and its Work is only watched here: waited for in slices, so that Ctrl-C
    // is seen within one. A send's or receive's wait gives its message up when its time runs out: waited whole.
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const bool whole = kind == WorkKind::kMessage || left <= kInterruptSlice;
    try {
      work->wait(whole ? std::max(left, std::chrono::milliseconds(1)) : kInterruptSlice);
      return;
    } catch (const c10::Error& e) {
      error = e.what_without_backtrace();
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (kind != WorkKind::kMessage && work->isCompleted()) {
      // The wait may have run out a moment before the collective finished on gloo's thread: a finished one says
      // itself whether it succeeded (raising here would fail a call that succeeded on every rank, the peers moving
      // on to the next step without this one).
      try {
        work->wait();
        return;
      } catch (const c10::Error& e) {
        error = e.what_without_backtrace();
      } catch (const std::exception& e) {
        error = e.what();
      }
      break;
    }
    if (whole) break;
    try {
      throwIfInterrupted(what);
    } catch (const StatusError& e) {
      workLeftBehind_ = true;
      leaveNote(e.what_without_backtrace());  // a peer must not hand this group to its next operation
      throw;
    }
  }
  const std::string remote = remotePeers();
  // Every peer is alive on this host and one closed its connections: it released this communicator (its last
  // operation went) and is making a fresh one, which the caller's operation follows, as on shm. Not for a
  // torch group's (a peer cannot release it alone) or one with peers elsewhere (a lost host closes them too).
  const bool closedByPeer = !group_ && remote.empty() &&
                            (error.find("Connection closed by peer") != std::string::npos ||
                             error.find("Connection reset by peer") != std::string::npos);
  // A killed peer's sockets close while it is still exiting: give its death a moment to show in /proc. A peer
  // whose interpreter is still tearing down (sys.exit) closes them too, and must be named dead, not followed into
  // a creation it never joins: its exit shows within seconds, a release never does.
  // A peer that gave up on this group (timed out) closes its connections too, after saying so in the notes: this
  // rank's call must not be followed into the peer's next creation, to meet a later call of the peer's there.
  std::string dead = deadPeers();
  std::string gaveUp;
  const auto readNote = [&] {
    try {
      gaveUp = peerNote();  // none where peers are elsewhere (the store may be on the host that was lost)
    } catch (const std::exception&) {
      // The store went: the peers' deaths or the timeout say what happened.
    }
  };
  if (closedByPeer) readNote();
  // Only for an error that came early: at the deadline a dead peer has long shown, and every surviving rank must
  // raise within ATB_OPS_TIMEOUT (a lost link: the grace made it the timeout plus a second).
  const bool atDeadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200) >= deadline;
  for (int i = 0; i < (atDeadline ? 0 : closedByPeer ? 300 : 100) && dead.empty() && gaveUp.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    dead = deadPeers();
    if (closedByPeer) readNote();
  }
  ATB_CHECK(dead.empty(), ERROR_COMM_PEER_DIED, "gloo ", what, " on ", name_, " (rank ", rank(), " of ", size(),
            "): peer ", dead, " exited: ", error);
  ATB_CHECK(gaveUp.empty(), ERROR_COMM_PEER_DIED, "gloo ", what, " on ", name_, " (rank ", rank(), " of ", size(),
            "): ", gaveUp);
  ATB_CHECK(!closedByPeer, ERROR_COMM_PEER_LEFT, "gloo ", what, " on ", name_, " (rank ", rank(), " of ", size(),
            "): a peer released this communicator (its operation went) while this rank still held it: ", error);
  const std::string why =
      c10::str("gloo ", what, " on ", name_, " (rank ", rank(), " of ", size(), ") failed or timed out (",
               options().timeout.describe(), ")",
               remote.empty() ? "" : "; a peer on another host was lost (" + remote + ")", ": ", error);
  readNote();  // a peer that gave up first, whose reason may say more (the rank both waited for, ...)
  if (!gaveUp.empty()) ATB_FAIL(ERROR_COMM_TIMEOUT, why, "; ", gaveUp);
  leaveNote(why);  // a peer that did not take part yet must not hand this group to its next operation
  ATB_FAIL(ERROR_COMM_TIMEOUT, why);
}

void GlooCommunicator::crossCheck(const CallSignature& sig, const AllToAllVLayout* counts) {
  checkExchange(sig, counts, nullptr);
}

EagerResult GlooCommunicator::checkAndComplete(const CallSignature& sig, const AllToAllVLayout* counts,
                                               const EagerCall& call) {
  return checkExchange(sig, counts, &call);
}

EagerResult GlooCommunicator::checkExchange(const CallSignature& sig, const AllToAllVLayout* counts,
                                            const EagerCall* call) {
  // One all-to-all of a size every rank knows whatever the call, so ranks that called different collectives still
  // exchange matching messages and all raise: to each peer, the signature, alltoallv's counts to and from each rank
  // (zeros otherwise) and room_ bytes, where a small call's data rides along: then the call is done here.
  const int32_t n = size();
  const int32_t me = rank();
  const int64_t headerBytes = callHeaderBytes(n);
  const int64_t room = room_.room();
  const int64_t block = headerBytes + room;
  std::vector<char> header(static_cast<size_t>(headerBytes));
  const char* h = header.data();
  writeCallHeader(sig, counts, n, header.data());
  // The peers' blocks back to back in rank order (this rank's own takes no room).
  at::Tensor out = at::empty({(n - 1) * block}, at::kByte);
  at::Tensor in = at::empty({(n - 1) * block}, at::kByte);
  auto* o = static_cast<char*>(out.data_ptr());
  for (int32_t peer = 0, slot = 0; peer < n; ++peer) {
    if (peer == me) continue;
    char* dst = o + slot++ * block;
    std::memcpy(dst, h, static_cast<size_t>(headerBytes));
    const int64_t bytes = std::max<int64_t>(call != nullptr ? eagerBytes(*call, peer, me, room) : -1, 0);
    if (bytes > 0) {
      const auto* src = static_cast<const char*>(call->send->data_ptr());
      const int64_t from =
          call->kind == Collective::kAlltoallv ? call->layout->sdispls[peer] * call->send->element_size() : 0;
      std::memcpy(dst + headerBytes, src + from, static_cast<size_t>(bytes));
    }
    std::memset(dst + headerBytes + bytes, 0, static_cast<size_t>(room - bytes));  // nothing of this process leaks
  }
  if (n > 1) {
    std::vector<int64_t> splits(static_cast<size_t>(n), block);
    splits[me] = 0;
    std::vector<int64_t> outSplits = splits;  // two vectors: the backend moves from what it is given
    waitFor(backend_->alltoall_base(in, out, splits, outSplits), "call cross-check");
  }
  const auto* received = static_cast<const char*>(in.data_ptr());
  auto blockOf = [&](int32_t r) -> const char* { return r == me ? h : received + (r < me ? r : r - 1) * block; };
  // The same prefix on every rank, whatever each called, so all raise one message.
  checkCallHeaders(n, blockOf, counts != nullptr, "gloo call #" + std::to_string(sig.seq));
  // The compared count matrix's largest chunk to another rank (whether the streams carry it), and to any rank, its
  // own included (whether the call fits the room, so also the room it needs).
  largestMessage_ = 0;
  int64_t largestChunk = 0;
  for (int32_t i = 0; i < n && counts != nullptr; ++i) {
    for (int32_t j = 0; j < n; ++j) {
      const int64_t bytes = headerCount(blockOf(i), j) * sig.elemSize;
      largestChunk = std::max(largestChunk, bytes);
      if (j != i) largestMessage_ = std::max(largestMessage_, bytes);
    }
  }
  room_.learn(signatureDigest(sig), roomNeeded(sig, largestChunk));
  if (call == nullptr || n == 1) return EagerResult::kChecked;
  // Every rank decides alike from what all agreed on (the signatures, the count matrix): either every sender put
  // its data in the check, or none is used.
  const bool fits = call->kind == Collective::kAlltoallv ? largestChunk <= room : eagerFits(sig, call->kind, room);
  if (!fits) return EagerResult::kChecked;
  const int64_t moved = completeFromPayloads(*call, me, n, [&](int32_t r) { return blockOf(r) + headerBytes; });
  stats_.eagerBytes.fetch_add(static_cast<uint64_t>(moved), std::memory_order_relaxed);
  return EagerResult::kCompleted;
}

int64_t GlooCommunicator::roomNeeded(const CallSignature& sig, int64_t largestChunk) const {
  switch (static_cast<Collective>(sig.collective)) {
    case Collective::kAlltoallv: return largestChunk <= movedRoomMost_ ? largestChunk : 0;
    case Collective::kAllgather:
    case Collective::kBroadcast: {
      const auto bytes = static_cast<int64_t>(sig.bytes);
      return bytes <= movedRoomMost_ ? bytes : 0;
    }
    case Collective::kAllreduce:
      // Only where the call would otherwise be one exchange, which reduces in the same order: a call gives the
      // same bits whichever way it went.
      return (size() - 1) * static_cast<int64_t>(sig.bytes) <= exchangeAllreduceBytes_ ? static_cast<int64_t>(sig.bytes)
                                                                                       : 0;
    default: return 0;
  }
}

void GlooCommunicator::doAlltoallv(const at::Tensor& send, const AllToAllVLayout& l, at::Tensor& recv) {
  const int64_t es = send.element_size();
  at::Tensor sendBytes = bytesOf(send);
  at::Tensor recvBytes = bytesOf(recv);
  // Only where a message is split: send/recv costs a round trip more than gloo's all-to-all (2 hosts, 512 KiB to
  // the peer: 2.0 against 1.3 ms). Decided alike on every rank, from the counts all compared.
  if (std::exchange(largestMessage_, 0) >= piecesFrom()) {
    alltoallvInPieces(sendBytes, l, es, recvBytes);
    return;
  }

  // Displacements with gaps, overlaps or another order: gather into rank order first.
  at::Tensor in;
  if (!packedInRankOrder(l.sendCounts, l.sdispls)) {
    in = at::empty({l.totalSend() * es}, sendBytes.options());
    int64_t offset = 0;
    for (size_t i = 0; i < l.sendCounts.size(); ++i) {
      const int64_t n = l.sendCounts[i] * es;
      copyContiguous(in.narrow(0, offset, n), sendBytes.narrow(0, l.sdispls[i] * es, n));
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
  waitFor(backend_->alltoall_base(out, in, outSplits, inSplits), "alltoallv");

  if (!recvPacked) {
    int64_t offset = 0;
    for (size_t i = 0; i < l.recvCounts.size(); ++i) {
      const int64_t n = l.recvCounts[i] * es;
      copyContiguous(recvBytes.narrow(0, l.rdispls[i] * es, n), out.narrow(0, offset, n));
      offset += n;
    }
  }
}

void GlooCommunicator::alltoallvInPieces(const at::Tensor& sendBytes, const AllToAllVLayout& l, int64_t es,
                                         at::Tensor& recvBytes) {
  // Each message on its own, straight between the caller's buffers (no packing, whatever the displacements), a
  // large one in pieces. Sender and receiver split it alike: both know its size (the counts compared).
  const int32_t me = rank();
  copyContiguous(recvBytes.narrow(0, l.rdispls[me] * es, l.recvCounts[me] * es),
                 sendBytes.narrow(0, l.sdispls[me] * es, l.sendCounts[me] * es));
  exchangeInPieces([&](int32_t peer) { return sendBytes.narrow(0, l.sdispls[peer] * es, l.sendCounts[peer] * es); },
                   [&](int32_t peer) { return recvBytes.narrow(0, l.rdispls[peer] * es, l.recvCounts[peer] * es); },
                   "alltoallv");
}

void GlooCommunicator::exchangeInPieces(const std::function<at::Tensor(int32_t)>& toPeer,
                                        const std::function<at::Tensor(int32_t)>& fromPeer, const char* what) {
  const int32_t me = rank();
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  auto post = [&](bool receive, int32_t peer, const at::Tensor& message) {
    const auto pieces = messagePieces(message.numel());
    if (!receive && !extraStreams_.empty() && pieces.size() > 1) {
      stats_.streamedBytes.fetch_add(static_cast<uint64_t>(message.numel()), std::memory_order_relaxed);
    }
    for (const Piece& p : pieces) {
      if (p.bytes == 0) continue;
      // One tag for every piece: gloo matches a pair's messages of one tag in the order they were posted.
      std::vector<at::Tensor> t{message.narrow(0, p.begin, p.bytes)};
      works.push_back(receive ? stream(p.stream)->recv(t, peer, kStreamsTag)
                              : stream(p.stream)->send(t, peer, kStreamsTag));
    }
  };
  // Every receive first: gloo's send waits until the peer has posted the matching receive.
  for (int32_t peer = 0; peer < size(); ++peer) {
    if (peer != me) post(true, peer, fromPeer(peer));
  }
  for (int32_t step = 1; step < size(); ++step) {
    const int32_t peer = (me + step) % size();  // rotated, so the ranks do not all send to rank 0 first
    post(false, peer, toPeer(peer));
  }
  for (const auto& w : works) waitFor(w, what, WorkKind::kMessage);
}

void GlooCommunicator::doAllgather(const at::Tensor& send, at::Tensor& recv) {
  at::Tensor out = bytesOf(recv);
  gatherBytes(bytesOf(send), out, "allgather");
}

void GlooCommunicator::gatherBytes(at::Tensor in, at::Tensor& out, const char* what) {
  // gloo's allgather is slower than its all_to_all_single moving the same bytes at every size measured, on
  // loopback and between hosts (2 ranks, 80 B: 0.40 vs 0.20 ms on loopback, 1.6 vs 0.4 ms across two emulated
  // hosts; 1 MiB: 2.4 vs 1.35 ms; 4 ranks likewise), so every gather is an all-to-all of the input to every other
  // rank. The own block does not travel.
  const int64_t n = in.numel();
  if (size() == 1 || n == 0) {
    if (n > 0 && out.data_ptr() != in.data_ptr()) copyContiguous(out.narrow(0, 0, n), in);
    return;
  }
  const int64_t others = size() - 1;
  const auto* inBegin = static_cast<const char*>(in.data_ptr());
  const auto* outBegin = static_cast<const char*>(out.data_ptr());
  // An input inside the output (gathering in place) would be overwritten while it is read: work on a copy.
  if (inBegin < outBegin + out.numel() && outBegin < inBegin + n) in = in.clone();
  if (n >= piecesFrom()) {
    // Large blocks in pieces, each straight from the input into its place: no copies per peer, nothing moved after.
    copyContiguous(out.narrow(0, rank() * n, n), in);
    exchangeInPieces([&](int32_t) { return in; }, [&](int32_t peer) { return out.narrow(0, peer * n, n); }, what);
    return;
  }
  at::Tensor copies = in;  // two ranks: the one block to send is the input itself
  if (others > 1) {
    copies = at::empty({others, n}, in.options());
    if (options().hugePages && n * others >= (int64_t{1} << 21)) adviseHugePages(copies);
    for (int64_t i = 0; i < others; ++i) copyContiguous(copies[i], in);
    copies = copies.view({-1});
  }
  std::vector<int64_t> inSplits(static_cast<size_t>(size()), n);
  inSplits[rank()] = 0;
  std::vector<int64_t> outSplits = inSplits;           // two vectors: the backend moves from what it is given
  at::Tensor received = out.narrow(0, 0, others * n);  // the blocks arrive packed, without this rank's
  waitFor(backend_->alltoall_base(received, copies, outSplits, inSplits), what);
  auto* base = static_cast<char*>(out.data_ptr());
  const int64_t after = size() - 1 - rank();  // blocks of higher ranks move up one slot, then this rank's goes in
  if (after > 0) std::memmove(base + (rank() + 1) * n, base + rank() * n, static_cast<size_t>(after * n));
  std::memcpy(base + rank() * n, in.data_ptr(), static_cast<size_t>(n));
}

void GlooCommunicator::doAllreduce(const at::Tensor& send, at::Tensor& recv, ReduceOp op) {
  const auto bytes = static_cast<int64_t>(send.nbytes());
  if (bytes > 0 && (size() - 1) * bytes <= exchangeAllreduceBytes_) {
    // Every rank's whole input to every other in one exchange, then reduced here in rank order, as every rank
    // does (the same bits everywhere): one round where gloo's ring takes several. 2 ranks on two emulated hosts,
    // 10 Gbit/s: 32 KiB 0.7 vs 2.6 ms, 256 KiB 0.6 vs 3.6 ms, 2 MiB 2.7 vs 4.2 ms; the ring wins from 8 MiB
    // (9.0 vs 15 ms), where each rank would send all of its input to every peer.
    at::Tensor rows = at::empty({size() * bytes}, at::kByte);
    gatherBytes(bytesOf(send), rows, "allreduce");
    const auto* base = static_cast<const char*>(rows.data_ptr());
    std::vector<const char*> parts;
    for (int32_t i = 0; i < size(); ++i) parts.push_back(base + i * bytes);
    reduceInOrder(parts.data(), parts.size(), static_cast<char*>(recv.data_ptr()), send.numel(), send.scalar_type(),
                  op);
    return;
  }
  if (size() == 2 && !group_ && bytes >= kPairwiseAllreduceMinBytes) {
    allreducePairwise(send, recv, op);
    return;
  }
  const c10::ScalarType acc = accumulationType(send.scalar_type());
  if (!glooReduces(acc)) {
    Communicator::doAllreduce(send, recv, op);  // int16, bool: alltoallv of bytes, reduced here
    return;
  }
  // gloo reduces in place: work on the output (widened when the dtype is 16-bit). One connection: split over two,
  // all-reduces were no faster on 2 hosts x 1 rank (16-64 MiB, 0.71-0.99x gloo in four runs against 0.86-0.94x on
  // one: two concurrent rings share each rank's core).
  at::Tensor work = acc == recv.scalar_type() ? recv.view({-1}) : send.view({-1}).to(acc);
  if (acc == recv.scalar_type()) copyContiguous(work, send.view({-1}));
  std::vector<at::Tensor> tensors{work};
  c10d::AllreduceOptions opts;
  opts.reduceOp = toC10d(op);
  opts.timeout = options().timeout.value;
  waitFor(backend_->allreduce(tensors, opts), "allreduce");
  if (work.data_ptr() != recv.data_ptr()) recv.view({-1}).copy_(work);
}

void GlooCommunicator::allreducePairwise(const at::Tensor& send, at::Tensor& recv, ReduceOp op) {
  // Two ranks: each reduces one half, from the caller's input into its output, and sends it back reduced: every
  // byte crosses once each way, as in gloo's ring, without first copying the input into the output (gloo reduces in
  // place) and with half the reduction each. Rank 0 reduces [0, half), rank 1 the rest, each element once, in rank
  // order: both ranks hold the same bits.
  const int32_t me = rank();
  const int32_t peer = 1 - me;
  const int64_t n = send.numel();
  const int64_t es = send.element_size();
  const int64_t half = n / 2;
  const int64_t mineBegin = me == 0 ? 0 : half;
  const int64_t mineEnd = me == 0 ? half : n;
  const int64_t otherBegin = me == 0 ? half : 0;
  const int64_t otherEnd = me == 0 ? n : half;
  const at::Tensor in = bytesOf(send);
  at::Tensor out = bytesOf(recv);
  // In place, the peer's half cannot land where this rank's own input still is: it arrives beside, and is reduced
  // into place. The other half needs nothing: a piece of it comes back reduced only after the peer received it whole
  // from here, so its send had finished reading it.
  const bool inPlace = send.data_ptr() == recv.data_ptr();
  at::Tensor arrived = inPlace ? at::empty({(mineEnd - mineBegin) * es}, in.options())
                               : out.narrow(0, mineBegin * es, (mineEnd - mineBegin) * es);
  const int64_t step = std::max<int64_t>(kPairPieceBytes / es, 1);  // elements per piece
  struct Piece {
    int64_t begin, count;  // elements, from the half's start
  };
  auto piecesOf = [&](int64_t count) {
    std::vector<Piece> v;
    for (int64_t b = 0; b < count; b += step) v.push_back({b, std::min(step, count - b)});
    return v;
  };
  const std::vector<Piece> mine = piecesOf(mineEnd - mineBegin);
  const std::vector<Piece> other = piecesOf(otherEnd - otherBegin);
  auto bytesAt = [es](const at::Tensor& t, int64_t element, int64_t count) {
    return std::vector<at::Tensor>{t.narrow(0, element * es, count * es)};
  };
  stats_.pairwiseBytes.fetch_add(static_cast<uint64_t>(send.nbytes()), std::memory_order_relaxed);
  std::vector<c10::intrusive_ptr<c10d::Work>> toReduce, gathered, sent;
  // Every receive first: gloo's send waits until the peer has posted the matching receive.
  for (const Piece& p : mine) {
    auto t = bytesAt(arrived, p.begin, p.count);
    toReduce.push_back(backend_->recv(t, peer, kReduceTag));
  }
  for (const Piece& p : other) {
    auto t = bytesAt(out, otherBegin + p.begin, p.count);
    gathered.push_back(backend_->recv(t, peer, kGatherTag));
  }
  for (const Piece& p : other) {
    auto t = bytesAt(in, otherBegin + p.begin, p.count);
    sent.push_back(backend_->send(t, peer, kReduceTag));
  }
  const auto* inBase = static_cast<const char*>(in.data_ptr());
  const auto* arrivedBase = static_cast<const char*>(arrived.data_ptr());
  auto* outBase = static_cast<char*>(out.data_ptr());
  for (size_t k = 0; k < mine.size(); ++k) {
    waitFor(toReduce[k], "allreduce", WorkKind::kMessage);
    const int64_t first = mineBegin + mine[k].begin;
    const char* own = inBase + first * es;
    const char* theirs = arrivedBase + mine[k].begin * es;
    const char* parts[2] = {me == 0 ? own : theirs, me == 0 ? theirs : own};  // rank order
    reduceInOrder(parts, 2, outBase + first * es, mine[k].count, send.scalar_type(), op);
    auto t = bytesAt(out, first, mine[k].count);
    sent.push_back(backend_->send(t, peer, kGatherTag));
  }
  for (const auto& w : gathered) waitFor(w, "allreduce", WorkKind::kMessage);
  for (const auto& w : sent) waitFor(w, "allreduce", WorkKind::kMessage);
}

int64_t GlooCommunicator::piecesFrom() const {
  if (!extraStreams_.empty()) return kStreamsMinBytes;
  return acrossHosts_ ? kPiecesMinBytes : std::numeric_limits<int64_t>::max();
}

std::vector<GlooCommunicator::Piece> GlooCommunicator::messagePieces(int64_t bytes) const {
  const auto streams = static_cast<int64_t>(extraStreams_.size()) + 1;
  if (bytes < piecesFrom()) return {{0, bytes, 0}};
  const int64_t count = streams > 1 ? streams : (bytes + kPieceBytes - 1) / kPieceBytes;
  const int64_t each = (bytes + count - 1) / count;
  std::vector<Piece> pieces;
  for (int64_t begin = 0, k = 0; begin < bytes; begin += each, ++k) {
    pieces.push_back({begin, std::min(each, bytes - begin), static_cast<size_t>(k % streams)});
  }
  return pieces;
}

c10d::Backend* GlooCommunicator::stream(size_t s) const {
  return s == 0 ? backend_.get() : extraStreams_[s - 1].get();
}

void GlooCommunicator::doBroadcast(at::Tensor& tensor, int32_t root) {
  std::vector<at::Tensor> tensors{bytesOf(tensor)};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  opts.timeout = options().timeout.value;
  waitFor(backend_->broadcast(tensors, opts), "broadcast");
}

namespace {

// A message's header: its bytes, dtype and tag.
at::Tensor headerOf(const at::Tensor& tensor, int32_t tag) {
  at::Tensor h = at::empty({3}, at::kLong);
  h[0] = static_cast<int64_t>(tensor.nbytes());
  h[1] = static_cast<int64_t>(tensor.scalar_type());
  h[2] = tag;
  return h;
}

}  // namespace

GlooCommunicator::PeerHeader GlooCommunicator::exchangeHeader(const at::Tensor& tensor, int32_t peer, int32_t tag,
                                                              bool sender) {
  const char* what = sender ? "send (size check)" : "recv (size check)";
  at::Tensor theirs = at::empty({3}, at::kLong);
  std::vector<at::Tensor> m{headerOf(tensor, tag)};
  std::vector<at::Tensor> t{theirs};
  if (sender) waitFor(backend_->send(m, peer, 0), what, WorkKind::kMessage);
  waitFor(backend_->recv(t, peer, 0), what, WorkKind::kMessage);
  if (!sender) waitFor(backend_->send(m, peer, 0), what, WorkKind::kMessage);
  return PeerHeader::of(theirs);
}

void GlooCommunicator::checkHeader(const PeerHeader& theirs, const at::Tensor& tensor, int32_t peer, int32_t tag,
                                   bool sender) const {
  const bool same = theirs.bytes == static_cast<int64_t>(tensor.nbytes()) && theirs.type == tensor.scalar_type();
  if (sender) {
    ATB_CHECK(same, ERROR_INVALID_PARAM, "gloo send: rank ", shown(rank()), " sent ", tensor.numel(), " elements of ",
              tensor.scalar_type(), " to rank ", shown(peer), ", which expected ", theirs.elements(), " elements of ",
              theirs.type);
    ATB_CHECK(theirs.tag == tag, ERROR_INVALID_PARAM, "gloo send: rank ", shown(rank()), " sent tag ", tag, " to rank ",
              shown(peer), ", whose receive takes tag ", theirs.tag, kTagsInOrder);
  } else {
    ATB_CHECK(same, ERROR_INVALID_PARAM, "gloo recv: rank ", shown(rank()), " expected ", tensor.numel(),
              " elements of ", tensor.scalar_type(), " from rank ", shown(peer), ", which sent ", theirs.elements(),
              " elements of ", theirs.type);
    ATB_CHECK(theirs.tag == tag, ERROR_INVALID_PARAM, "gloo recv: rank ", shown(rank()), " takes tag ", tag,
              " from rank ", shown(peer), ", which sent tag ", theirs.tag, kTagsInOrder);
  }
}

void GlooCommunicator::doSend(const at::Tensor& tensor, int32_t peer, int32_t tag) {
  // gloo aborts the process when a message is longer than the receive buffer: agree on sizes (and tags) first.
  checkHeader(exchangeHeader(tensor, peer, tag, /*sender=*/true), tensor, peer, tag, /*sender=*/true);
  std::vector<at::Tensor> t{bytesOf(tensor)};
  if (t[0].numel() > 0) waitFor(backend_->send(t, peer, 0), "send", WorkKind::kMessage);
}

void GlooCommunicator::doRecv(at::Tensor& tensor, int32_t peer, int32_t tag) {
  checkHeader(exchangeHeader(tensor, peer, tag, /*sender=*/false), tensor, peer, tag, /*sender=*/false);
  std::vector<at::Tensor> t{bytesOf(tensor)};
  if (t[0].numel() > 0) waitFor(backend_->recv(t, peer, 0), "recv", WorkKind::kMessage);
}

void GlooCommunicator::doSendRecv(std::vector<P2pOp>& ops) {
  // gloo matches the messages of one peer and tag in the order they were posted, so a rank's k-th send to a peer
  // meets that peer's k-th receive from it: each side's header travels both ways on tags of the batch's own (the
  // sender's on kBatchForwardTag, the receiver's on kBatchBackTag), then the data on the forward one.
  std::vector<at::Tensor> theirs;
  std::vector<c10::intrusive_ptr<c10d::Work>> posted;
  for (const P2pOp& op : ops) {
    theirs.push_back(at::empty({3}, at::kLong));
    std::vector<at::Tensor> m{headerOf(op.tensor, op.tag)};
    std::vector<at::Tensor> t{theirs.back()};
    posted.push_back(backend_->send(m, op.peer, op.isSend ? kBatchForwardTag : kBatchBackTag));
    posted.push_back(backend_->recv(t, op.peer, op.isSend ? kBatchBackTag : kBatchForwardTag));
  }
  for (const auto& work : posted) waitFor(work, "send/recv (size check)", WorkKind::kMessage);
  // A transfer whose two sides disagree moves nothing (both sides see both headers, so both skip it); the others
  // still move, so that their peers, which found nothing wrong, complete rather than wait out the timeout. Then the
  // first disagreement raises here and on its peer.
  std::exception_ptr disagreement;
  posted.clear();
  for (size_t i = 0; i < ops.size(); ++i) {
    try {
      checkHeader(PeerHeader::of(theirs[i]), ops[i].tensor, ops[i].peer, ops[i].tag, ops[i].isSend);
    } catch (const StatusError&) {
      if (!disagreement) disagreement = std::current_exception();
      continue;
    }
    std::vector<at::Tensor> t{bytesOf(ops[i].tensor)};
    if (t[0].numel() == 0) continue;
    posted.push_back(ops[i].isSend ? backend_->send(t, ops[i].peer, kBatchForwardTag)
                                   : backend_->recv(t, ops[i].peer, kBatchForwardTag));
  }
  for (const auto& work : posted) waitFor(work, "send/recv", WorkKind::kMessage);
  if (disagreement) std::rethrow_exception(disagreement);
}

void GlooCommunicator::doBarrier() {
  c10d::BarrierOptions opts;
  opts.timeout = options().timeout.value;
  waitFor(backend_->barrier(opts), "barrier");
}

void GlooCommunicator::doShutdown() {
  if (workLeftBehind_) {  // left to the process's end, as a failed group is by the destructor
    backend_.release();
    for (auto& stream : extraStreams_) stream.release();
  }
  backend_.reset();
  extraStreams_.clear();
  group_.reset();
}

void setGlooFactory(GlooFactory f) {
  std::lock_guard<std::mutex> lock(factoryMutex());
  factory() = std::move(f);
}

namespace {
const bool registered = [] {
  registerBackend("gloo", c10::DeviceType::CPU,
                  [](const CommConfig& c) { return std::make_shared<GlooCommunicator>(c); });
  return true;
}();
}  // namespace

}  // namespace atb_ops::gloo
