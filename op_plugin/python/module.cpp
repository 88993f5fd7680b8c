// atb_ops._C: the Python module of the package. Loading it loads libatb_ops_torch (OperationTorch, the
// torch.ops.atb_ops ops) and libatb_ops (operators, backends); these helpers serve the Python package:
// communicators for torch.distributed groups, the store the bootstrap uses, the options, validation, the
// shared-memory arena.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include <c10/util/Exception.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "comm/bootstrap/bootstrap.h"
#include "comm/bootstrap/job_census.h"
#include "comm/bootstrap/node_local_bootstrap.h"
#include "comm/bootstrap/private_dir.h"
#include "comm/comm_cache.h"
#include "comm/communicator.h"
#include "comm/gloo/gloo_communicator.h"
#include "comm/shm/arena.h"
#include "comm/shm/segment_layout.h"
#include "core/host.h"
#include "core/interrupt.h"
#include "core/layout.h"
#include "core/memory.h"
#include "core/options.h"
#include "core/status.h"
#include "op_plugin/python/c10d_binding.h"
#include "op_plugin/python/direct_collectives.h"
#include "op_plugin/python/operation_class.h"
#include "op_plugin/python/python_errors.h"
#include "op_plugin/torch/comm_handles.h"
#include "ops/operation_registry.h"
#include "quant/quant.h"

namespace py = pybind11;

namespace {

int64_t validateLayout(std::vector<int64_t> sendCounts, std::vector<int64_t> sdispls, std::vector<int64_t> recvCounts,
                       std::vector<int64_t> rdispls, int64_t rankSize, int64_t sendNumel, int64_t recvCapacity) {
  return atb_ops::withPythonErrors([&] {
    return atb_ops::validateLayout(atb_ops::AllToAllVLayout{sendCounts, sdispls, recvCounts, rdispls}, rankSize,
                                   sendNumel, recvCapacity);
  });
}

// What a Python hook of the bootstrap raised, as the status the waits would have given: Ctrl-C, a peer that
// never came (the store's or our own wait timed out), ranks that disagree, or no store or group at all.
[[noreturn]] void raiseHookFailure(py::error_already_set& e, const char* what) {
  ATB_CHECK(!e.matches(PyExc_KeyboardInterrupt), ERROR_INTERRUPTED, what, ": interrupted (SIGINT)");
  const std::string why = e.what();
  ATB_CHECK(!e.matches(PyExc_TimeoutError) && why.find("Timed out") == std::string::npos, ERROR_COMM_TIMEOUT, what,
            ": ", why);
  ATB_CHECK(why.find("ranks disagree") == std::string::npos, ERROR_INVALID_PARAM, what, ": ", why);
  ATB_FAIL(ERROR_COMM_EMPTY, what, ": ", why);
}

void installStoreProvider(py::object provider) {
  if (provider.is_none()) {
    atb_ops::setStoreProvider(nullptr);
    return;
  }
  // Leaked on purpose: the provider must outlive the interpreter's teardown order.
  auto* held = new py::object(std::move(provider));
  atb_ops::setStoreProvider([held](const atb_ops::StoreRequest& r) -> c10::intrusive_ptr<c10d::Store> {
    py::gil_scoped_acquire gil;
    try {
      py::object store = (*held)(r.required, r.rank, r.size, std::chrono::duration<double>(r.timeout).count());
      if (store.is_none()) return {};
      return store.cast<c10::intrusive_ptr<c10d::Store>>();
    } catch (py::error_already_set& e) {
      raiseHookFailure(e, "the torch.distributed store could not be had");
    }
  });
}

void installGlooFactory(py::object factory) {
  if (factory.is_none()) {
    atb_ops::gloo::setGlooFactory(nullptr);
    return;
  }
  auto* held = new py::object(std::move(factory));  // leaked on purpose, like the store provider
  atb_ops::gloo::setGlooFactory(
      [held](const std::string& prefix, int32_t rank, int32_t size, std::chrono::milliseconds timeout,
             const c10::intrusive_ptr<c10d::Store>& store) -> c10::intrusive_ptr<c10d::Backend> {
        py::gil_scoped_acquire gil;
        try {
          py::object given = store ? py::cast(store) : py::none();
          return (*held)(prefix, rank, size, std::chrono::duration<double>(timeout).count(), given)
              .cast<c10::intrusive_ptr<c10d::Backend>>();
        } catch (py::error_already_set& e) {
          raiseHookFailure(e, "backend 'gloo' could not create its group");
        }
      });
}

// The Python main thread (Linux thread id): only there does CPython deliver SIGINT, and only there is asking
// for it safe while other threads wait for each other with the GIL released.
std::atomic<long> mainThread{0};

bool pythonInterrupted() {
  if (syscall(SYS_gettid) != mainThread.load(std::memory_order_relaxed) || _Py_IsFinalizing()) return false;
  const PyGILState_STATE gil = PyGILState_Ensure();
  // Taken: the surface the call came through raises KeyboardInterrupt for it (op_plugin/torch/gil_release.h).
  const bool hit = PyOS_InterruptOccurred() != 0;
  PyGILState_Release(gil);
  return hit;
}

int64_t makeComm(const std::string& backend, int32_t rank, int32_t size, const std::string& commDomain,
                 const std::string& jobKey, const c10::Device& device, py::object group,
                 const std::vector<std::string>& rankHosts) {
  return atb_ops::withPythonErrors([&] {
    c10::intrusive_ptr<c10d::ProcessGroup> pg;
    if (!group.is_none()) pg = group.cast<c10::intrusive_ptr<c10d::ProcessGroup>>();
    const atb_ops::CommConfig config =
        atb_ops::configForGroup(backend, rank, size, commDomain, jobKey, device, pg, rankHosts);
    py::gil_scoped_release unlocked;  // creation waits for peers, which may be threads of this process
    return atb_ops::handleOf(atb_ops::acquireCommunicator(config));
  });
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "atb_ops native core: ATB operations and communicators";

  m.def("backends", &atb_ops::registeredBackends, "Backends built into this atb_ops, as 'name (device)'.");
  m.def("operation_names", &atb_ops::registeredOperations, "The ATB operators built into this atb_ops, sorted.");
  m.def("communicator_count", &atb_ops::cachedCommunicatorCount, "Live communicators in the cache.");
  m.def(
      "communicator_stats",
      [](const std::string& commDomain) {
        py::list out;
        for (const auto& comm : atb_ops::liveCommunicators(commDomain)) {
          const atb_ops::CommStats& s = comm->stats();
          out.append(py::dict(
              py::arg("backend") = comm->backend(), py::arg("rank") = comm->rank(), py::arg("size") = comm->size(),
              py::arg("collectives") = s.collectives.load(), py::arg("eager_bytes") = s.eagerBytes.load(),
              py::arg("memcpy_bytes") = s.memcpyBytes.load(), py::arg("vm_bytes") = s.vmBytes.load(),
              py::arg("pushed_bytes") = s.pushedBytes.load(), py::arg("nontemporal_bytes") = s.nontemporalBytes.load(),
              py::arg("pipeline_calls") = s.pipelineCalls.load(), py::arg("huge_page_bytes") = s.hugePageBytes.load(),
              py::arg("staged_bytes") = s.stagedBytes.load(), py::arg("streamed_bytes") = s.streamedBytes.load(),
              py::arg("pairwise_bytes") = s.pairwiseBytes.load(), py::arg("cross_memory") = s.crossMemory.load(),
              py::arg("spins") = s.spins.load()));
        }
        return out;
      },
      py::arg("comm_domain"),
      "What each live communicator of a commDomain moved and by which route (counters since it was made).");
  m.def(
      "clear_communicators",
      [](bool atExit) {
        py::gil_scoped_release unlocked;
        atb_ops::releaseAllHandles();
        atb_ops::clearCommunicatorCache(atExit);
      },
      py::arg("at_exit") = false,
      "Drops the groups' communicators and forgets the cached ones (in tests); communicators that operations "
      "still hold live on with them. at_exit: those are shut down too (their gloo groups released).");
  m.def(
      "host_id", [] { return atb_ops::withPythonErrors([] { return atb_ops::hostIdentity(atb_ops::readOptions()); }); },
      "This host's identity as ranks compare it (csrc/core/host.h): equal exactly when two processes can share "
      "memory.");
  m.def(
      "declare_no_rank",
      [] { atb_ops::withPythonErrors([] { atb_ops::JobCensus::declareNoRank(atb_ops::readOptions()); }); },
      "Tells ranks scoped by their parent process that this process (a multiprocessing Manager's server) takes "
      "no rank, so they never wait for it to claim one (csrc/comm/bootstrap/job_census.h).");
  m.def(
      "release_comm",
      [](int64_t handle) {
        py::gil_scoped_release unlocked;
        atb_ops::releaseHandle(handle);
      },
      py::arg("handle"),
      "Drops a group's communicator handle (its group went); the communicator goes with its last user.");
  m.def(
      "options",
      [] { return atb_ops::withPythonErrors([] { return atb_ops::describeOptions(atb_ops::readOptions()); }); },
      "The ATB_OPS_* settings as atb_ops reads them now (one parser for C++ and Python); raises on a bad value.");
  m.def(
      "environment_proves_job", [] { return atb_ops::thisEnvironmentProvesJob(); },
      "Whether this process's environment alone proves its job (ATB_OPS_JOB_ID, torchrun, an MPI or Slurm "
      "launcher): the rule the node-local rendezvous applies (core/options.h).");
  m.def("set_store_provider", &installStoreProvider, py::arg("provider"),
        "Installs provider(required, rank, size, timeout_s) -> torch.distributed Store | None: the job's store for "
        "the bootstrap.");
  m.def(
      "install_interrupt_check",
      [](long nativeThreadId) {
        mainThread.store(nativeThreadId);
        atb_ops::setInterruptCheck(&pythonInterrupted);
      },
      py::arg("main_thread_native_id"),
      "Lets waits for peers notice Ctrl-C in the given (main) thread: the call is abandoned and raises "
      "KeyboardInterrupt.");
  m.def("set_gloo_factory", &installGlooFactory, py::arg("factory"),
        "Installs factory(prefix, rank, size, timeout_s, store) -> a gloo Backend on `store` (None: the job's).");
  m.def("make_comm", &makeComm, py::arg("backend"), py::arg("rank"), py::arg("size"), py::arg("comm_domain"),
        py::arg("job_key"), py::arg("device"), py::arg("group") = py::none(),
        py::arg("rank_hosts") = std::vector<std::string>{},
        "The handle of the (cached) communicator of a torch.distributed group's collectives.");
  atb_ops::bindDirectCollectives(m);
  atb_ops::bindOperationClass(m);
  atb_ops::bindC10dBackend(m);
  m.def(
      "comm_size",
      [](int64_t h) { return atb_ops::withPythonErrors([&] { return atb_ops::communicatorOf(h)->size(); }); },
      py::arg("handle"));
  m.def(
      "comm_backend",
      [](int64_t h) { return atb_ops::withPythonErrors([&] { return atb_ops::communicatorOf(h)->backend(); }); },
      py::arg("handle"));
  m.def(
      "comm_rank",
      [](int64_t h) { return atb_ops::withPythonErrors([&] { return atb_ops::communicatorOf(h)->rank(); }); },
      py::arg("handle"));

  m.def(
      "node_files",
      [] {
        return atb_ops::withPythonErrors([] {
          // What doctor needs to recognise atb_ops' files without copying their formats into Python.
          const atb_ops::CensusFileFormat census = atb_ops::censusFileFormat();
          return py::dict(
              py::arg("dir") = atb_ops::privateDirPath(atb_ops::readOptions()),
              py::arg("claim_magic") = census.claimMagic, py::arg("claim_pid_offset") = census.claimPidOffset,
              py::arg("claim_start_time_offset") = census.claimStartTimeOffset,
              py::arg("verdict_magic") = census.verdictMagic,
              py::arg("verdict_count_offset") = census.verdictCountOffset,
              py::arg("verdict_pids_offset") = census.verdictPidsOffset,
              py::arg("verdict_starts_offset") = census.verdictStartsOffset,
              py::arg("verdict_pids") = census.verdictPids, py::arg("segment_magic") = atb_ops::shm::kSegmentMagic,
              py::arg("segment_root_pid_offset") = offsetof(atb_ops::shm::SegmentHeader, rootPid),
              py::arg("segment_start_time_offset") = offsetof(atb_ops::shm::SegmentHeader, rootStartTime),
              py::arg("record_magic") = atb_ops::kRendezvousMagic, py::arg("record_root_pid_offset") = 24,
              py::arg("record_start_time_offset") = 32);
        });
      },
      "Where atb_ops keeps its node-local files and how to read their creator's pid (python -m atb_ops doctor).");
  m.def(
      "shm_empty_bytes",
      [](int64_t nbytes) {
        return atb_ops::withPythonErrors(
            [&] { return atb_ops::shm::emptyShared({nbytes}, at::TensorOptions().dtype(at::kByte)); });
      },
      py::arg("nbytes"), "A uint8 CPU tensor of nbytes in the process's shared-memory arena (see atb_ops.shm_empty).");
  m.def(
      "shm_arena_info",
      [] {
        const atb_ops::shm::Arena& a = atb_ops::shm::Arena::instance();
        return py::dict(py::arg("enabled") = a.enabled(), py::arg("reserved_bytes") = a.bytes(),
                        py::arg("used_bytes") = a.usedBytes());
      },
      "The shared-memory arena: whether it is on, its reserved and its allocated bytes.");
  m.def(
      "shm_is_shared",
      [](const at::Tensor& t) {
        return t.device().is_cpu() && atb_ops::shm::Arena::instance().contains(t.data_ptr(), t.nbytes());
      },
      py::arg("tensor"), "Whether the tensor's memory lies in the shared-memory arena.");
  m.def(
      "collapse_huge_pages",
      [](const at::Tensor& t) -> uint64_t {
        // The same rule as a communicator's reused buffers: CPU, at least kMinBytes, ATB_OPS_HUGEPAGES on.
        if (!t.defined() || !t.device().is_cpu() || t.nbytes() < atb_ops::ReusedBufferPages::kMinBytes ||
            !atb_ops::readOptions().hugePages) {
          return 0;
        }
        py::gil_scoped_release release;  // a collapse can take tens of milliseconds
        return atb_ops::collapseHugePages(t.data_ptr(), t.nbytes());
      },
      py::arg("tensor"),
      "Collapses a CPU tensor's whole transparent huge pages onto huge pages, as atb_ops does to the buffers an "
      "operation is given call after call (tensors of 4 MiB and more, ATB_OPS_HUGEPAGES on); returns the bytes "
      "collapsed (0 where THP is off or the kernel refuses). The benchmark gives every library's buffers the "
      "same memory with it.");
  m.def(
      "_quant_cpu_isa",
      [](const std::string& request) {
        try {
          return atb_ops::quant::cpuIsa(request);
        } catch (const c10::Error& e) {
          throw std::invalid_argument(e.what_without_backtrace());  // ValueError
        }
      },
      py::arg("request") = "",
      "Which atb_ops.quant CPU kernels run: '' (query), 'auto', 'scalar' or 'avx2'; returns the active one.");

  m.def("validate_layout", &validateLayout, py::arg("send_counts"), py::arg("sdispls"), py::arg("recv_counts"),
        py::arg("rdispls"), py::arg("rank_size"), py::arg("send_numel"), py::arg("recv_capacity") = -1,
        "The one alltoallv layout check (csrc/core/layout.h); returns sum(recv_counts), raises RuntimeError.");
}
