#include "comm/shm/shm_attach.h"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "comm/bootstrap/bootstrap.h"
#include "comm/bootstrap/job_census.h"
#include "comm/bootstrap/node_local_bootstrap.h"
#include "core/interrupt.h"
#include "core/json_fields.h"
#include "core/layout.h"
#include "core/process.h"
#include "core/status.h"

namespace atb_ops::shm {
namespace {

using Clock = std::chrono::steady_clock;

void sleepBackoff(int& attempt) {
  throwIfInterrupted("shm communicator creation");
  std::this_thread::sleep_for(std::chrono::microseconds(attempt < 50 ? 200 : 2000));
  ++attempt;
}

std::string describe(const CommConfig& c) {
  return "shm communicator (commDomain '" + c.commDomain + "', rankSize " + std::to_string(c.rankSize) + ", job '" +
         jobKeyFor(c) + "')";
}

// A word of this process's memory that peers read back at creation to learn whether the kernel lets them.
const uint64_t& probeWord() {
  static const uint64_t word = [] {
    uint64_t w = 0;
    const std::string token = randomToken();
    std::memcpy(&w, token.data(), sizeof(w));
    return w | 1;
  }();
  return word;
}

// Yama (ptrace_scope=1, Ubuntu's default for non-root users) lets a process read another's memory only when
// it is that process's ancestor or was named its tracer; ranks are siblings. Like Open MPI's shared-memory
// transport, every rank names any process of this user its tracer (the kernel still checks user and
// capabilities). Without Yama the call fails with EINVAL and nothing changes.
void allowPeersToRead() {
  static const bool once = [] {
    ::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    return true;
  }();
  (void)once;
}

// Segments of creations whose root was killed before it removed the name (its record, claims and verdicts
// too): whoever creates next finds them stale and removes them, so no run needs `doctor --clean`.
void sweepSegments(const std::string& dir) {
  for (const std::string& name : namesStartingWith(dir, "seg.")) {
    const std::string path = dir + "/" + name;
    MappedFile f;
    try {
      f = MappedFile::open(path);
    } catch (const c10::Error&) {
      continue;  // not ours
    }
    if (!f.valid() || f.size() < sizeof(SegmentHeader)) continue;
    const auto& h = *static_cast<const SegmentHeader*>(f.base());
    if (h.magic.load(std::memory_order_acquire) != kSegmentMagic) continue;
    if (processAlive(h.rootPid) && processStartTime(h.rootPid) == h.rootStartTime) continue;
    unlinkIfSame(f, path);
  }
}

void claimSlot(const CommConfig& c, const SegmentView& v) {
  const pid_t self = ::getpid();
  int32_t expected = 0;
  ATB_CHECK(v.slot(c.rank).pid.compare_exchange_strong(expected, self), ERROR_INVALID_PARAM, describe(c), ": rank ",
            c.rank, " is already taken by pid ", expected, "; every rank needs its own 'rank'");
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof(mine), &mine) != 0) CPU_SET(0, &mine);
  SlotHead& s = v.slot(c.rank);
  for (size_t w = 0; w < kCpuWords; ++w) {
    uint64_t bits = 0;
    for (size_t b = 0; b < 64; ++b) {
      if (CPU_ISSET(w * 64 + b, &mine)) bits |= uint64_t{1} << b;
    }
    s.cpus[w] = bits;
  }
  const Arena& arena = Arena::instance();
  s.arenaBase = reinterpret_cast<uint64_t>(arena.base());
  s.arenaBytes = arena.enabled() ? arena.bytes() : 0;
  s.arenaFd = arena.fd();
  allowPeersToRead();
  s.probeAddr = reinterpret_cast<uint64_t>(&probeWord());
  s.probeValue = probeWord();
  v.header().attached.fetch_add(1);  // publishes the slot's pid, cpus, arena and probe
}

// Every rank reads every other process's probe word with process_vm_readv and all agree on the verdict: where
// the kernel refuses (a ptrace-restricted host), every rank moves data through the arena instead, together.
void probeCrossMemory(const CommConfig& c, Attachment& a, Clock::time_point deadline) {
  const pid_t self = ::getpid();
  const SegmentView& v = a.view;
  bool ok = true;
  for (int32_t p = 0; p < c.rankSize; ++p) {
    const SlotHead& peer = v.slot(p);
    const pid_t pid = peer.pid.load();
    if (pid == self) continue;  // a thread of this process: memcpy
    uint64_t got = 0;
    iovec mine{&got, sizeof(got)};
    iovec theirs{reinterpret_cast<void*>(peer.probeAddr), sizeof(got)};
    const ssize_t n = ::process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
    if (n != static_cast<ssize_t>(sizeof(got)) || got != peer.probeValue) {
      if (a.crossMemoryError.empty()) {
        a.crossMemoryError = c10::str("process_vm_readv from rank ", p, " (pid ", pid,
                                      "): ", n < 0 ? std::strerror(errno) : "wrong bytes");
      }
      ok = false;
    }
  }
  v.slot(c.rank).crossMemory.store(ok ? 1 : 2);
  a.crossMemory = true;
  int attempt = 0;
  for (int32_t p = 0; p < c.rankSize; ++p) {
    int32_t verdict;
    while ((verdict = v.slot(p).crossMemory.load()) == 0) {
      ATB_CHECK(Clock::now() < deadline, ERROR_COMM_TIMEOUT, describe(c), ": rank ", p, " (pid ", v.slot(p).pid.load(),
                ") did not finish probing its peers' memory within ", c.options.timeout.describe());
      sleepBackoff(attempt);
    }
    a.crossMemory = a.crossMemory && verdict == 1;
  }
}

void mapPeerArenas(const CommConfig& c, Attachment& a, PeerMemory& memory, Clock::time_point deadline) {
  const pid_t self = ::getpid();
  Arena& arena = Arena::instance();
  const SegmentView& v = a.view;
  a.peerArenas.clear();
  a.peerArenas.resize(c.rankSize);
  bool ok = true;
  for (int32_t p = 0; p < c.rankSize; ++p) {
    const SlotHead& peer = v.slot(p);
    if (peer.arenaBytes == 0) {
      ok = false;
    } else if (peer.pid.load() == self) {
      memory.setArena(p, peer.arenaBase, peer.arenaBytes, arena.base());  // a thread of this process
    } else {
      a.peerArenas[p] = PeerArenaMapping::map(peer.pid.load(), peer.arenaFd, peer.arenaBytes);
      memory.setArena(p, peer.arenaBase, peer.arenaBytes, a.peerArenas[p].base());
      ok = ok && a.peerArenas[p].valid();
    }
  }
  v.slot(c.rank).arenaMapped.store(ok ? 1 : 2);
  // Every rank must agree whether the arena routes are on, so all wait for all verdicts.
  int attempt = 0;
  a.arenasShared = true;
  for (int32_t p = 0; p < c.rankSize; ++p) {
    int32_t verdict;
    while ((verdict = v.slot(p).arenaMapped.load()) == 0) {
      ATB_CHECK(Clock::now() < deadline, ERROR_COMM_TIMEOUT, describe(c), ": rank ", p, " (pid ", v.slot(p).pid.load(),
                ") did not finish mapping its peers' arenas within ", c.options.timeout.describe());
      sleepBackoff(attempt);
    }
    a.arenasShared = a.arenasShared && verdict == 1;
  }
  if (!a.arenasShared) {
    a.peerArenas.clear();
    memory.dropArenas();
  }
}

}  // namespace

Attachment attachSegment(const CommConfig& c, PeerMemory& memory, CommStats* stats) {
  ATB_CHECK(c.rankSize <= kMaxRanks, ERROR_INVALID_PARAM, "backend 'shm' supports at most ", kMaxRanks,
            " ranks on one host; rankSize is ", c.rankSize, " (use backend 'gloo' across hosts)");
  Arena::instance();  // raises on a malformed ATB_OPS_SHM_ARENA before anything is claimed
  const auto deadline = Clock::now() + c.options.timeout.value;
  const std::string dir = privateDir(c.options);
  sweepSegments(dir);
  sweepStaleRecords(c.options);
  JobCensus::sweepStale(c.options);
  std::unique_ptr<Bootstrap> bootstrap = makeBootstrap(c, "shm");
  Attachment a;
  std::string name;
  if (c.rank == c.rankRoot) {
    // The root sizes the eager buffers; the others read the size from the header.
    const size_t eager = eagerBufferBytes(c.rankSize);
    name = "seg." + randomToken();
    try {
      a.file = MappedFile::create(dir + "/" + name, SegmentView::bytesFor(c.rankSize, eager));
    } catch (const c10::Error& e) {
      bootstrap->fail(e.what_without_backtrace());
      throw;
    }
    a.view = SegmentView(a.file.base(), c.rankSize, eager);
    SegmentHeader& h = a.view.header();
    h.rankSize = c.rankSize;
    h.rootPid = ::getpid();
    h.rootStartTime = processStartTime(h.rootPid);
    h.eagerBytes = static_cast<uint32_t>(eager);
    h.eagerLimit = c.options.shmEager;
    h.split = c.options.shmSplit ? 1 : 0;
    h.magic.store(kSegmentMagic, std::memory_order_release);
    claimSlot(c, a.view);
    try {
      bootstrap->broadcast(name);
    } catch (...) {
      unlinkIfSame(a.file, a.file.path());
      throw;
    }
  } else {
    name = bootstrap->broadcast("");
    ATB_CHECK(name.rfind("seg.", 0) == 0 && name.find('/') == std::string::npos, ERROR_RT_FAIL, describe(c),
              ": the bootstrap delivered '", excerpt(name, 64), "', not a segment name");
    a.file = MappedFile::open(dir + "/" + name);
    ATB_CHECK(a.file.valid() && a.file.size() >= sizeof(SegmentHeader), ERROR_RT_FAIL, describe(c), ": segment '", dir,
              "/", name, "' of root rank ", c.rankRoot,
              " is not on this host; backend 'shm' needs every rank on one host (use 'gloo' across hosts)");
    auto& h = *static_cast<SegmentHeader*>(a.file.base());
    ATB_CHECK(h.magic.load(std::memory_order_acquire) == kSegmentMagic && h.rankSize == c.rankSize &&
                  a.file.size() == SegmentView::bytesFor(c.rankSize, h.eagerBytes),
              ERROR_RT_FAIL, describe(c), ": segment '", name, "' does not match (rankSize ", h.rankSize, ")");
    a.view = SegmentView(a.file.base(), c.rankSize, h.eagerBytes);
    claimSlot(c, a.view);
  }

  // Everyone meets here, so a missing rank is reported at creation, not at the first collective. The
  // root's name goes once everyone holds a mapping, or once the rendezvous failed.
  int attempt = 0;
  while (a.view.header().attached.load() < c.rankSize) {
    if (Clock::now() >= deadline) {
      std::vector<int64_t> missing;
      for (int32_t r = 0; r < c.rankSize; ++r) {
        if (a.view.slot(r).pid.load() == 0) missing.push_back(r);
      }
      if (c.rank == c.rankRoot) unlinkIfSame(a.file, a.file.path());
      ATB_FAIL(ERROR_COMM_TIMEOUT, describe(c), ": rank(s) ", formatRanks(missing), " did not join within ",
               c.options.timeout.describe());
    }
    sleepBackoff(attempt);
  }
  if (c.rank == c.rankRoot) unlinkIfSame(a.file, a.file.path());

  memory.reset(c.rankSize, stats);
  int cpus = 0;
  for (size_t w = 0; w < kCpuWords; ++w) {
    uint64_t all = 0;
    for (int32_t r = 0; r < c.rankSize; ++r) all |= a.view.slot(r).cpus[w];
    cpus += __builtin_popcountll(all);
  }
  a.spin = std::max(c.rankSize, c.kernelRanks) <= cpus;
  for (int32_t r = 0; r < c.rankSize; ++r) memory.setPid(r, a.view.slot(r).pid.load());
  probeCrossMemory(c, a, deadline);
  mapPeerArenas(c, a, memory, deadline);
  // Without process_vm_readv, large messages go through the arena; without both there is no way for them.
  ATB_CHECK(a.crossMemory || a.arenasShared, ERROR_RT_FAIL, describe(c),
            ": the ranks can neither read each other's memory (",
            a.crossMemoryError.empty() ? "refused on a peer" : a.crossMemoryError,
            ": ptrace is restricted here) nor share their shared-memory arenas (ATB_OPS_SHM_ARENA is ",
            c.options.shmArenaBytes ? std::to_string(*c.options.shmArenaBytes) : std::string("unset"),
            ", or memfd is unavailable); allow ptrace between the ranks or give them an arena");
  return a;
}

}  // namespace atb_ops::shm
