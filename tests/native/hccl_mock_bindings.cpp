// atb_ops._testing: the HCCL backend's logic over the recording mock HcclApi (tests only).
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <c10/util/Exception.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/hccl/hccl_communicator.h"
#include "comm/hccl/hccl_dtype.h"
#include "core/layout.h"
#include "core/options.h"
#include "core/params.h"
#include "core/reduce.h"
#include "op_plugin/python/python_errors.h"
#include "tests/native/hccl_mock_api.h"

namespace py = pybind11;

namespace atb_ops {
namespace {

using hccl::MockHcclApi;

py::dict callToDict(const hccl::MockCall& c) {
  py::dict d;
  d["fn"] = c.fn;
  d["comm"] = c.comm;
  d["stream"] = c.stream;
  d["result"] = c.result;
  for (const auto& kv : c.ints) d[py::str(kv.first)] = kv.second;
  for (const auto& kv : c.arrays) d[py::str(kv.first)] = kv.second;
  for (const auto& kv : c.strings) d[py::str(kv.first)] = py::bytes(kv.second);
  if (c.fn == "HcclBatchSendRecv") {
    py::list items;
    for (const auto& it : c.items) {
      py::dict i;
      i["type"] = it.type == hccl::SendRecvType::kSend ? "send" : "recv";
      i["buf"] = reinterpret_cast<uintptr_t>(it.buf);
      i["count"] = it.count;
      i["dataType"] = it.dataType;
      i["remoteRank"] = it.remoteRank;
      items.append(i);
    }
    d["items"] = items;
  }
  return d;
}

// An HcclCommunicator over the process-wide mock, made and driven the way the operations do it.
class MockCommunicator {
 public:
  MockCommunicator(int32_t rank, int32_t rankSize, int32_t rankRoot, uint64_t hcclComm, int32_t commMode,
                   const std::string& rankTableFile, const std::string& commDomain, int32_t deviceIndex,
                   const std::string& jobKey) {
    CommParam p;
    p.rank = rank;
    p.rankSize = rankSize;
    p.rankRoot = rankRoot;
    p.hcclComm = hcclComm;
    p.commMode = static_cast<CommMode>(commMode);
    p.rankTableFile = rankTableFile;
    p.commDomain = commDomain;
    CommConfig c;
    c.backend = "hccl";
    c.rank = rank;
    c.rankSize = rankSize;
    c.rankRoot = rankRoot;
    c.handle = hcclComm;
    c.commMode = p.commMode;
    c.rankTableFile = rankTableFile;
    c.commDomain = commDomain;
    c.jobKey = jobKey;
    c.deviceIndex = deviceIndex;
    c.deviceType = c10::DeviceType::PrivateUse1;
    c.options = readOptions();
    withPythonErrors([&] {
      validateCommParam(p, "HcclMockCommunicator");
      py::gil_scoped_release unlocked;
      comm_ = hccl::makeHcclCommunicator(c, MockHcclApi::instance());
    });
  }

  void alltoallv(const at::Tensor& send, std::vector<int64_t> sendCounts, std::vector<int64_t> sdispls,
                 std::vector<int64_t> recvCounts, std::vector<int64_t> rdispls, at::Tensor recv) {
    withPythonErrors([&] {
      AllToAllVLayout layout{std::move(sendCounts), std::move(sdispls), std::move(recvCounts), std::move(rdispls)};
      validateLayout(layout, live().size(), send.numel(), recv.numel());
      py::gil_scoped_release unlocked;
      live().alltoallv(send, layout, recv);
    });
  }

  void allgather(const at::Tensor& send, at::Tensor recv) {
    withPythonErrors([&] {
      py::gil_scoped_release unlocked;
      live().allgather(send, recv);
    });
  }

  void barrier() {
    withPythonErrors([&] {
      py::gil_scoped_release unlocked;
      live().barrier();
    });
  }

  void allgatherv(const at::Tensor& send, std::vector<int64_t> counts, std::vector<int64_t> displs, at::Tensor recv) {
    withPythonErrors([&] {
      const VLayout layout{std::move(counts), std::move(displs)};
      py::gil_scoped_release unlocked;
      live().allgatherv(send, layout, recv);
    });
  }

  void allreduce(const at::Tensor& send, at::Tensor recv, const std::string& op) {
    withPythonErrors([&] {
      const ReduceOp reduce = parseReduceOp(op, "op");
      py::gil_scoped_release unlocked;
      live().allreduce(send, recv, reduce);
    });
  }

  void reduceScatter(const at::Tensor& send, at::Tensor recv, const std::string& op) {
    withPythonErrors([&] {
      const ReduceOp reduce = parseReduceOp(op, "op");
      py::gil_scoped_release unlocked;
      live().reduceScatter(send, recv, reduce);
    });
  }

  void reduceScatterV(const at::Tensor& send, std::vector<int64_t> counts, std::vector<int64_t> displs, at::Tensor recv,
                      const std::string& op) {
    withPythonErrors([&] {
      const ReduceOp reduce = parseReduceOp(op, "op");
      const VLayout layout{std::move(counts), std::move(displs)};
      py::gil_scoped_release unlocked;
      live().reduceScatterV(send, layout, recv, reduce);
    });
  }

  void broadcast(at::Tensor tensor, int32_t root) {
    withPythonErrors([&] {
      py::gil_scoped_release unlocked;
      live().broadcast(tensor, root);
    });
  }

  void send(const at::Tensor& tensor, int32_t peer) {
    withPythonErrors([&] {
      py::gil_scoped_release unlocked;
      live().send(tensor, peer);
    });
  }

  void recv(at::Tensor tensor, int32_t peer) {
    withPythonErrors([&] {
      py::gil_scoped_release unlocked;
      live().recv(tensor, peer);
    });
  }

  uint64_t handle() {
    return reinterpret_cast<uintptr_t>(withPythonErrors([&] { return live().handle(); }));
  }
  std::string origin() {
    return withPythonErrors([&] { return std::string(hccl::originName(live().origin())); });
  }
  int32_t device() {
    return withPythonErrors([&] { return live().device(); });
  }

  void close() {
    py::gil_scoped_release unlocked;
    comm_.reset();
  }

 private:
  hccl::HcclCommunicator& live() {
    TORCH_CHECK(comm_ != nullptr, "ERROR_COMM_EMPTY: this mock communicator was closed");
    return *comm_;
  }
  std::shared_ptr<hccl::HcclCommunicator> comm_;
};

}  // namespace

void bindHcclMock(py::module_& m) {
  m.attr("_hccl_root_info_bytes") = hccl::kRootInfoBytes;

  m.def(
      "_hccl_dtype_code",
      [](const at::Tensor& t) {
        return withPythonErrors([&] { return hccl::dataTypeFor(t.scalar_type(), "tensor"); });
      },
      "HcclDataType code the hccl backend uses for this tensor's dtype; RuntimeError if none.");
  m.def(
      "_hccl_alltoallv_path",
      [] { return withPythonErrors([] { return std::string(hccl::pathName(hccl::alltoallvPath(readOptions()))); }); },
      "The HCCL function alltoallv uses under the current ATB_OPS_HCCL_ALLTOALLV.");

  m.def(
      "_hccl_mock_reset", [] { MockHcclApi::instance()->reset(); }, "Clears the mock's call log, options and worlds.");
  m.def(
      "_hccl_mock_configure",
      [](std::map<std::string, int32_t> fail, int32_t eventPollsToComplete, int32_t asyncErrorAfterPolls,
         int32_t asyncErrorCode, uint64_t streamBase, int32_t clusterRankSize, int32_t zerosBugMinRanks,
         int32_t collectiveTimeoutMs) {
        hccl::MockOptions o;
        o.failWith = std::move(fail);
        o.eventPollsToComplete = eventPollsToComplete;
        o.asyncErrorAfterPolls = asyncErrorAfterPolls;
        o.asyncErrorCode = asyncErrorCode;
        o.streamBase = streamBase;
        o.clusterRankSize = clusterRankSize;
        o.zerosBugMinRanks = zerosBugMinRanks;
        o.collectiveTimeoutMs = collectiveTimeoutMs;
        MockHcclApi::instance()->configure(o);
      },
      py::arg("fail") = std::map<std::string, int32_t>(), py::arg("event_polls_to_complete") = 0,
      py::arg("async_error_after_polls") = -1, py::arg("async_error_code") = hccl::result::kRemote,
      py::arg("stream_base") = 0x5000, py::arg("cluster_rank_size") = 1, py::arg("zeros_bug_min_ranks") = 0,
      py::arg("collective_timeout_ms") = 60000, "Sets every mock option (unnamed ones back to their defaults).");
  m.def(
      "_hccl_mock_calls",
      [](const std::string& fn) {
        py::list out;
        for (const auto& c : MockHcclApi::instance()->calls()) {
          if (fn.empty() || c.fn == fn) out.append(callToDict(c));
        }
        return out;
      },
      py::arg("fn") = "", "The mock's call log (only calls of `fn` when given), oldest first, as dicts.");
  m.def(
      "_hccl_mock_user_comms",
      [](int32_t n) {
        std::vector<uint64_t> out;
        for (auto h : MockHcclApi::instance()->makeUserComms(n)) out.push_back(reinterpret_cast<uintptr_t>(h));
        return out;
      },
      "n communicator handles of one world made outside atb_ops (to pass as hcclComm).");
  m.def(
      "_hccl_mock_destroy_count",
      [](uint64_t handle) {
        return MockHcclApi::instance()->destroyCount(
            reinterpret_cast<hccl::CommHandle>(static_cast<uintptr_t>(handle)));
      },
      "How often HcclCommDestroy ran on a mock handle (-1: not a mock handle).");
  m.def(
      "_hccl_mock_live_events", [] { return MockHcclApi::instance()->liveEvents(); },
      "aclrtEvents created and not yet destroyed.");

  py::class_<MockCommunicator>(m, "_HcclMockCommunicator",
                               "HcclCommunicator over the recording mock HcclApi (tests only).")
      .def(py::init<int32_t, int32_t, int32_t, uint64_t, int32_t, const std::string&, const std::string&, int32_t,
                    const std::string&>(),
           py::arg("rank"), py::arg("rank_size"), py::arg("rank_root") = 0, py::arg("hccl_comm") = 0,
           py::arg("comm_mode") = 0, py::arg("rank_table_file") = "", py::arg("comm_domain") = "",
           py::arg("device_index") = -1, py::arg("job_key") = "")
      .def("alltoallv", &MockCommunicator::alltoallv, py::arg("send"), py::arg("send_counts"), py::arg("sdispls"),
           py::arg("recv_counts"), py::arg("rdispls"), py::arg("recv"))
      .def("allgather", &MockCommunicator::allgather, py::arg("send"), py::arg("recv"))
      .def("allgatherv", &MockCommunicator::allgatherv, py::arg("send"), py::arg("counts"), py::arg("displs"),
           py::arg("recv"))
      .def("allreduce", &MockCommunicator::allreduce, py::arg("send"), py::arg("recv"), py::arg("op") = "sum")
      .def("reduce_scatter", &MockCommunicator::reduceScatter, py::arg("send"), py::arg("recv"), py::arg("op") = "sum")
      .def("reduce_scatterv", &MockCommunicator::reduceScatterV, py::arg("send"), py::arg("counts"), py::arg("displs"),
           py::arg("recv"), py::arg("op") = "sum")
      .def("broadcast", &MockCommunicator::broadcast, py::arg("tensor"), py::arg("root"))
      .def("send", &MockCommunicator::send, py::arg("tensor"), py::arg("peer"))
      .def("recv", &MockCommunicator::recv, py::arg("tensor"), py::arg("peer"))
      .def("barrier", &MockCommunicator::barrier)
      .def("close", &MockCommunicator::close)
      .def_property_readonly("handle", &MockCommunicator::handle)
      .def_property_readonly("origin", &MockCommunicator::origin)
      .def_property_readonly("device", &MockCommunicator::device);
}

}  // namespace atb_ops
