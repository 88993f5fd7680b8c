// The "gloo" backend: a torch.distributed gloo backend for CPU tensors (it reaches other hosts).
//   - For an ATB param: a gloo group of its own per (commDomain, rankSize), built on the job's
//     torch.distributed store under a prefix, so communicators of different commDomains never share a
//     socket or a message, and the ranks' order of creating domains does not matter.
//   - For atb_ops.distributed: the caller's own ProcessGroup.
// Data moves as bytes where the collective does not compute (every dtype works; gloo has no int16), and
// 16-bit floats are reduced in float32. Between hosts, all-to-all and all-gather messages of 4 MiB and more move by
// send/recv in pieces of at most 2 MiB (one large message both ways at once is slow on a TCP connection); a group of
// its own whose hosts hold one rank each opens ATB_OPS_GLOO_STREAMS connections between every pair (a group each) and
// sends messages of 8 MiB and more as one piece on each. Two ranks of an own group all-reduce 16 MiB and more pairwise:
// each reduces half from the input straight into the output and sends it back.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "comm/eager_completion.h"

namespace atb_ops::gloo {

// Makes a gloo backend of `size` ranks under `prefix` of `store` (null: the job's store, made from
// MASTER_ADDR/MASTER_PORT when there is none yet). Installed by the Python package: torch ships no gloo headers,
// so only torch.distributed's own binding can construct one.
using GlooFactory = std::function<c10::intrusive_ptr<c10d::Backend>(const std::string& prefix, int32_t rank,
                                                                    int32_t size, std::chrono::milliseconds timeout,
                                                                    const c10::intrusive_ptr<c10d::Store>& store)>;
void setGlooFactory(GlooFactory factory);

class GlooCommunicator final : public Communicator {
 public:
  explicit GlooCommunicator(const CommConfig& config);
  ~GlooCommunicator() override;

 protected:
  // One exchange of every rank's signature (and alltoallv's counts) before any data moves (checkExchange).
  void crossCheck(const CallSignature& sig, const AllToAllVLayout* counts) override;
  // The same exchange, carrying a small call's data: all-to-all, all-gather, all-reduce and broadcast of a few
  // KiB per peer (more where repeated calls need it: LearnedRoom), and barrier, are done in it (one round between the
  // ranks instead of two).
  EagerResult checkAndComplete(const CallSignature& sig, const AllToAllVLayout* counts, const EagerCall& call) override;
  void doAlltoallv(const at::Tensor& send, const AllToAllVLayout& layout, at::Tensor& recv) override;
  void doAllgather(const at::Tensor& send, at::Tensor& recv) override;
  void doAllreduce(const at::Tensor& send, at::Tensor& recv, ReduceOp op) override;
  void doBroadcast(at::Tensor& tensor, int32_t root) override;
  void doSend(const at::Tensor& tensor, int32_t peer, int32_t tag) override;
  void doRecv(at::Tensor& tensor, int32_t peer, int32_t tag) override;
  // A batch (batch_isend_irecv, HcclBatchSendRecv): every message posted before any is waited for, so ranks that
  // each send to the other first meet.
  void doSendRecv(std::vector<P2pOp>& ops) override;
  void doBarrier() override;
  void doShutdown() override;
  // A group atb_ops made: a note under its keys in the store it met on, read when the cache would hand it out.
  void abortPeers(const std::string& reason) override;
  bool abandonedByPeer() const override;

 private:
  // A collective's Work, or a single message's (a send or receive: gloo gives it up when a wait on it runs out).
  enum class WorkKind { kCollective, kMessage };
  // Waits up to the timeout; raises naming the peers that died or were lost, ERROR_INTERRUPTED on Ctrl-C during a
  // collective, else ERROR_COMM_TIMEOUT.
  void waitFor(const c10::intrusive_ptr<c10d::Work>& work, const char* what,
               WorkKind kind = WorkKind::kCollective) const;
  // A send or receive's size, dtype and tag, as its peer gave them.
  struct PeerHeader {
    int64_t bytes;
    c10::ScalarType type;
    int64_t tag;
    int64_t elements() const { return bytes / static_cast<int64_t>(c10::elementSize(type)); }
    // From the three int64 a peer sent (headerOf in the .cpp: bytes, dtype, tag).
    static PeerHeader of(const at::Tensor& sent) {
      return PeerHeader{sent[0].item<int64_t>(), static_cast<c10::ScalarType>(sent[1].item<int64_t>()),
                        sent[2].item<int64_t>()};
    }
  };
  // Gives `peer` this rank's header for `tensor` and `tag` and returns the peer's (the sender's goes first).
  PeerHeader exchangeHeader(const at::Tensor& tensor, int32_t peer, int32_t tag, bool sender);
  // Raises ERROR_INVALID_PARAM, naming both sides, where the peer's header does not match this rank's message.
  void checkHeader(const PeerHeader& theirs, const at::Tensor& tensor, int32_t peer, int32_t tag, bool sender) const;
  // Writes this rank's reason for giving up into notes_ (the first one stays) where every peer is on this host;
  // never raises.
  void leaveNote(const std::string& reason) const;
  // Per peer, the room the compared call `sig` would have needed to ride in its comparison (0: it cannot);
  // `largestChunk`: an alltoallv's largest chunk in its compared counts, in bytes.
  int64_t roomNeeded(const CallSignature& sig, int64_t largestChunk) const;
  // The cross-check: compares every rank's call, with `call`'s data beside it where it fits (null: none).
  EagerResult checkExchange(const CallSignature& sig, const AllToAllVLayout* counts, const EagerCall* call);
  // alltoallv where a message is large enough to split: every message by send/recv, a large one in pieces.
  void alltoallvInPieces(const at::Tensor& sendBytes, const AllToAllVLayout& layout, int64_t elementSize,
                         at::Tensor& recvBytes);
  // Every other rank's message by send/recv (bytes; toPeer(p) to rank p, fromPeer(p) from it, the same sizes on
  // both ends), large ones in messagePieces; waits for all of them.
  void exchangeInPieces(const std::function<at::Tensor(int32_t)>& toPeer,
                        const std::function<at::Tensor(int32_t)>& fromPeer, const char* what);
  // All-reduce of two ranks in an own group: each reduces half straight into the output and sends it back, in
  // pieces (any dtype; `send` and `recv` the same buffer or apart).
  void allreducePairwise(const at::Tensor& send, at::Tensor& recv, ReduceOp op);
  // Messages of this many bytes or more move by send/recv in pieces: from 4 MiB on one connection between hosts,
  // from 8 MiB over several streams, never within one host.
  int64_t piecesFrom() const;
  // A message of `bytes` from piecesFrom(): one piece per stream over several, else pieces of at most 2 MiB; below it
  // one piece on stream 0. The same on both ends (each knows the message's size).
  struct Piece {
    int64_t begin, bytes;
    size_t stream;
  };
  std::vector<Piece> messagePieces(int64_t bytes) const;
  // Stream s: 0 is backend_, then extraStreams_.
  c10d::Backend* stream(size_t s) const;
  // Every rank's `in` (bytes, the same length on each) into `out` in rank order, through gloo's all-to-all.
  void gatherBytes(at::Tensor in, at::Tensor& out, const char* what);
  // Ranks on this host whose process has exited, for error messages ("" when none is known dead).
  std::string deadPeers() const;
  // "ranks 2-3 on 'h1'": the peers on other hosts, for errors where a host may be what was lost.
  std::string remotePeers() const;
  // "rank 1 gave up on this communicator: <its reason>" where a peer left a note (leaveNote), else empty; raises
  // when the store is gone.
  std::string peerNote() const;

  std::string name_;                              // for messages: "group 'x'" or "commDomain 'y'"
  c10::intrusive_ptr<c10d::ProcessGroup> group_;  // the caller's group, kept alive
  c10::intrusive_ptr<c10d::Backend> backend_;
  // More connections between the same ranks (ATB_OPS_GLOO_STREAMS - 1 groups, or none: extraStreamsFor).
  std::vector<c10::intrusive_ptr<c10d::Backend>> extraStreams_;
  // Where a rank that gave up on this group (timed out) says so (abortPeers): the group's own keys in the store its
  // ranks met on; null for a caller's group.
  c10::intrusive_ptr<c10d::Store> notes_;
  // A wait gave up on a collective still running on gloo's threads (Ctrl-C): destroying the group would wait for it.
  mutable std::atomic<bool> workLeftBehind_{false};
  int64_t exchangeAllreduceBytes_ = 0;  // doAllreduce: up to this many bytes to the peers, one exchange
  bool acrossHosts_ = false;            // the ranks span several hosts (the same on every rank)
  int64_t largestMessage_ = 0;          // the compared alltoallv's largest message between two ranks, in bytes
  LearnedRoom room_{1, 0};              // bytes per peer the next comparison carries (set once the size is known)
  int64_t movedRoomMost_ = 0;           // per peer, the most room all-to-all, all-gather and broadcast teach
  std::vector<int64_t> peerHosts_;      // per rank: a hash of its host identity (pids compare only within a host)
  std::vector<int64_t> peerPids_;
  std::vector<std::string> peerHostNames_;  // per rank: its host name, for messages
  std::vector<int32_t> wholeRanks_;         // CommConfig::wholeRanks: how messages number the peers
  // Rank r as messages name it: its number in the whole communicator where this one is a part.
  int32_t shown(size_t r) const { return wholeRanks_.empty() ? static_cast<int32_t>(r) : wholeRanks_[r]; }
};

}  // namespace atb_ops::gloo
