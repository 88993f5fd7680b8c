// atb_ops._testing: the NCCL backend's logic over the recording mock NcclApi (tests only).
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "comm/bootstrap/bootstrap.h"
#include "comm/nccl/nccl_comm.h"
#include "core/layout.h"
#include "core/options.h"
#include "core/status.h"
#include "op_plugin/python/python_errors.h"
#include "tests/native/nccl_mock_api.h"

namespace py = pybind11;

namespace atb_ops {
namespace {

using nccl::NcclResult;

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

void* pointer(int64_t address) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(address));
}

int64_t extent(const std::vector<int64_t>& counts, const std::vector<int64_t>& displs) {
  int64_t end = 0;
  for (size_t i = 0; i < counts.size() && i < displs.size(); ++i) end = std::max(end, displs[i] + counts[i]);
  return end;
}

py::dict toDict(const nccl::MockCall& c) {
  py::dict d;
  d["op"] = c.op;
  for (const auto& kv : c.ints) d[py::str(kv.first)] = kv.second;
  for (const auto& kv : c.strings) d[py::str(kv.first)] = kv.second;
  return d;
}

// One mock NCCL library and at most one communicator over it.
class NcclMockSession {
 public:
  void failOn(const std::string& op, int64_t nth, int result) { api_.failOn(op, nth, static_cast<NcclResult>(result)); }
  void setInProgress(int64_t polls) { api_.setInProgress(polls); }
  void setAsyncError(int result) { api_.setAsyncError(static_cast<NcclResult>(result)); }
  void setStreamPending(int64_t polls, const std::string& error) { api_.setStreamPending(polls, error); }
  void setCommShape(int rank, int size) { api_.setCommShape(rank, size); }
  void setJoinDir(const std::string& dir) { api_.setJoinDir(dir); }
  void setUniqueId(const std::string& hex) {
    nccl::UniqueId id;
    TORCH_CHECK(nccl::fromHex(hex, id), "unique id must be ", 2 * nccl::kUniqueIdBytes, " hex digits, got ", hex.size(),
                " characters");
    api_.setUniqueId(id);
  }

  void adopt(int64_t handle, int32_t rank, int32_t size, double timeoutSeconds) {
    comm_.reset();
    comm_ = nccl::NcclComm::adopt(api_, pointer(handle), rank, size, Timeout{millis(timeoutSeconds)});
  }

  void create(int32_t rank, int32_t size, int32_t root, const std::string& commDomain, const std::string& jobKey,
              double timeoutSeconds) {
    comm_.reset();
    CommConfig c;
    c.backend = "nccl";
    c.rank = rank;
    c.rankSize = size;
    c.rankRoot = root;
    c.commDomain = commDomain;
    c.jobKey = jobKey;
    c.deviceType = c10::DeviceType::CUDA;
    c.options = readOptions();
    c.options.timeout.value = millis(timeoutSeconds);
    auto bootstrap = makeBootstrap(c, "nccl");
    comm_ = nccl::NcclComm::create(api_, rank, size, root, *bootstrap, c.options.timeout);
  }

  void alltoallv(const std::vector<int64_t>& sendCounts, const std::vector<int64_t>& sdispls,
                 const std::vector<int64_t>& recvCounts, const std::vector<int64_t>& rdispls, c10::ScalarType dtype,
                 int64_t send, int64_t recv, int64_t stream, bool asBytes) {
    const AllToAllVLayout layout{sendCounts, sdispls, recvCounts, rdispls};
    // The operations validate before any backend runs; so does this test entry, through the same function.
    validateLayout(layout, comm().size(), extent(sendCounts, sdispls), extent(recvCounts, rdispls));
    comm().alltoallv(layout, pointer(send), pointer(recv), dtype, pointer(stream), asBytes);
  }

  void allgather(int64_t numel, c10::ScalarType dtype, int64_t send, int64_t recv, int64_t stream) {
    comm().allgather(pointer(send), pointer(recv), numel, dtype, pointer(stream));
  }

  void waitStream(int64_t stream) { comm().waitStream(pointer(stream), "barrier"); }

  void release() { comm_.reset(); }

  bool owned() const { return comm_ && comm_->owned(); }
  int64_t handle() const { return comm_ ? static_cast<int64_t>(reinterpret_cast<uintptr_t>(comm_->handle())) : 0; }
  std::string brokenBy() const { return comm_ ? comm_->brokenBy() : std::string(); }

  py::list calls() const {
    py::list out;
    for (const auto& c : api_.calls()) out.append(toDict(c));
    return out;
  }
  std::map<std::string, int64_t> counts() const { return api_.counts(); }
  void clearCalls() { api_.clearCalls(); }

 private:
  nccl::NcclComm& comm() {
    TORCH_CHECK(comm_ != nullptr, "ERROR_COMM_EMPTY: the mock has no communicator: call adopt() or create() first");
    return *comm_;
  }

  // Declared first so the communicator (which calls it in its destructor) goes before it.
  nccl::MockNcclApi api_;
  std::unique_ptr<nccl::NcclComm> comm_;
};

constexpr int64_t kSendBase = 0x10000000;
constexpr int64_t kRecvBase = 0x20000000;
constexpr int64_t kStream = 0x5EED;

}  // namespace

void bindNcclMock(py::module& m) {
  py::class_<NcclMockSession>(m, "_NcclMock",
                              "The NCCL backend logic over a recording mock of NcclApi (tests only; no GPU).")
      .def(py::init<>())
      .def(
          "fail_on",
          [](NcclMockSession& s, const std::string& op, int64_t nth, int result) { s.failOn(op, nth, result); },
          py::arg("op"), py::arg("nth"), py::arg("result"), "The nth (from 0) call of op returns ncclResult `result`.")
      .def("set_in_progress", &NcclMockSession::setInProgress, py::arg("polls"),
           "Non-blocking mode: init/groupEnd/allGather return InProgress; ncclCommGetAsyncError says InProgress "
           "`polls` times (-1: forever).")
      .def("set_async_error", &NcclMockSession::setAsyncError, py::arg("result"))
      .def("set_stream_pending", &NcclMockSession::setStreamPending, py::arg("polls"), py::arg("error") = "")
      .def("set_comm_shape", &NcclMockSession::setCommShape, py::arg("rank"), py::arg("size"))
      .def("set_join_dir", &NcclMockSession::setJoinDir, py::arg("dir"),
           "Init stays InProgress until every rank appended itself to a file in `dir` (NCCL's join).")
      .def("set_unique_id", &NcclMockSession::setUniqueId, py::arg("hex"))
      .def(
          "adopt",
          [](NcclMockSession& s, int64_t h, int32_t r, int32_t n, double t) {
            withPythonErrors([&] { s.adopt(h, r, n, t); });
          },
          py::arg("handle"), py::arg("rank"), py::arg("size"), py::arg("timeout_s") = 5.0)
      .def(
          "create",
          [](NcclMockSession& s, int32_t r, int32_t n, int32_t root, const std::string& d, const std::string& j,
             double t) {
            py::gil_scoped_release unlocked;  // store hooks take the GIL back; other ranks may be threads
            withPythonErrors([&] { s.create(r, n, root, d, j, t); });
          },
          py::arg("rank"), py::arg("size"), py::arg("root") = 0, py::arg("comm_domain") = "", py::arg("job_key") = "",
          py::arg("timeout_s") = 5.0)
      .def(
          "alltoallv",
          [](NcclMockSession& s, std::vector<int64_t> sc, std::vector<int64_t> sd, std::vector<int64_t> rc,
             std::vector<int64_t> rd, c10::ScalarType dtype, int64_t send, int64_t recv, int64_t stream, bool asBytes) {
            withPythonErrors([&] { s.alltoallv(sc, sd, rc, rd, dtype, send, recv, stream, asBytes); });
          },
          py::arg("send_counts"), py::arg("sdispls"), py::arg("recv_counts"), py::arg("rdispls"), py::arg("dtype"),
          py::arg("send") = kSendBase, py::arg("recv") = kRecvBase, py::arg("stream") = kStream,
          py::arg("as_bytes") = false)
      .def(
          "allgather",
          [](NcclMockSession& s, int64_t numel, c10::ScalarType dtype, int64_t send, int64_t recv, int64_t stream) {
            withPythonErrors([&] { s.allgather(numel, dtype, send, recv, stream); });
          },
          py::arg("numel"), py::arg("dtype"), py::arg("send") = kSendBase, py::arg("recv") = kRecvBase,
          py::arg("stream") = kStream)
      .def(
          "wait_stream", [](NcclMockSession& s, int64_t stream) { withPythonErrors([&] { s.waitStream(stream); }); },
          py::arg("stream") = kStream)
      .def("release", &NcclMockSession::release, "Drops the communicator (destroys it if it was created here).")
      .def_property_readonly("owned", &NcclMockSession::owned)
      .def_property_readonly("handle", &NcclMockSession::handle)
      .def_property_readonly("broken_by", &NcclMockSession::brokenBy)
      .def("calls", &NcclMockSession::calls, "Recorded NcclApi calls, in order, as dicts.")
      .def("counts", &NcclMockSession::counts, "Calls per op, commGetAsyncError polls included.")
      .def("clear_calls", &NcclMockSession::clearCalls);

  m.def(
      "_nccl_mock_alltoallv",
      [](int32_t rank, int32_t size, std::vector<int64_t> sc, std::vector<int64_t> sd, std::vector<int64_t> rc,
         std::vector<int64_t> rd, c10::ScalarType dtype, int64_t stream, bool asBytes) {
        NcclMockSession s;
        s.setCommShape(rank, size);
        withPythonErrors([&] { s.adopt(0xADD0, rank, size, 5.0); });
        s.clearCalls();
        withPythonErrors([&] { s.alltoallv(sc, sd, rc, rd, dtype, kSendBase, kRecvBase, stream, asBytes); });
        return s.calls();
      },
      py::arg("rank"), py::arg("size"), py::arg("send_counts"), py::arg("sdispls"), py::arg("recv_counts"),
      py::arg("rdispls"), py::arg("dtype"), py::arg("stream") = kStream, py::arg("as_bytes") = false,
      "The NcclApi calls one alltoallv makes on an adopted mock communicator (send buffer at 0x10000000, "
      "receive buffer at 0x20000000).");
}

}  // namespace atb_ops
