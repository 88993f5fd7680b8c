#include "comm/comm_config.h"

#include <c10/util/Exception.h>

#include "comm/backend_registry.h"
#include "comm/bootstrap/job_scope.h"
#include "comm/bootstrap/rank_table.h"
#include "comm/bootstrap/store_bootstrap.h"
#include "core/status.h"

namespace atb_ops {
namespace {

const char* deviceName(c10::DeviceType d) {
  switch (d) {
    case c10::DeviceType::CPU: return "cpu";
    case c10::DeviceType::CUDA: return "cuda";
    case c10::DeviceType::PrivateUse1: return "npu";
    default: return "unsupported";
  }
}

std::string nativeBackendFor(c10::DeviceType d) {
  switch (d) {
    case c10::DeviceType::CPU: return "shm";
    case c10::DeviceType::CUDA: return "nccl";
    case c10::DeviceType::PrivateUse1: return "hccl";
    default:
      ATB_FAIL(ERROR_INVALID_PARAM, "tensors on device type ", c10::DeviceTypeName(d),
               " are not supported; use cpu, cuda or npu tensors");
  }
}

}  // namespace

std::string resolveBackend(const std::string& requested, const c10::Device& device, const Options& options) {
  const c10::DeviceType type = device.type();
  const std::string native = nativeBackendFor(type);
  if (requested == "auto") return native;
  if (requested == "shm" || requested == "gloo") {
    ATB_CHECK(type == c10::DeviceType::CPU, ERROR_INVALID_PARAM, "backend '", requested, "' moves CPU tensors, got a ",
              deviceName(type), " tensor; use backend 'auto' or '", native, "'");
    return requested;
  }
  if (requested == "nccl") {
    ATB_CHECK(type == c10::DeviceType::CUDA, ERROR_INVALID_PARAM, "backend 'nccl' moves CUDA tensors, got a ",
              deviceName(type), " tensor; use backend 'auto' or '", native, "'");
    ATB_CHECK(hasBackend("nccl", type), ERROR_INVALID_PARAM,
              "backend 'nccl' is not built into this atb_ops (torch without CUDA, or no nccl.h at build time)");
    return requested;
  }
  if (requested == "hccl" || requested == "lccl") {
    if (hasBackend("hccl", type)) {
      // No LCCL here: its operators run through HCCL, which has every collective LCCL offers.
      if (requested == "lccl") {
        TORCH_WARN_ONCE("atb_ops: backend 'lccl' runs through HCCL ('hccl') on ", deviceName(type), " tensors");
      }
      return "hccl";
    }
    ATB_CHECK(!options.strictBackend, ERROR_INVALID_PARAM, "backend '", requested, "' asked for ", deviceName(type),
              " tensors, and ATB_OPS_STRICT_BACKEND=1 forbids running them on '", native, "'");
    // Decided before anyone knows where the ranks are: across hosts shm is the part within each host.
    TORCH_WARN_ONCE("atb_ops: backend '", requested, "' on ", deviceName(type), " tensors runs on the '", native,
                    "' backend", native == "shm" ? " (gloo between hosts)" : "",
                    " (set ATB_OPS_STRICT_BACKEND=1 to make this an error)");
    return native;
  }
  ATB_FAIL(ERROR_INVALID_PARAM, "backend '", requested, "' is unknown; expected hccl, lccl, nccl, shm, gloo or auto");
}

void checkBackendAvailable(const std::string& requested, const Options& options, const std::string& opName) {
  if (!options.strictBackend || (requested != "hccl" && requested != "lccl")) return;
  ATB_CHECK(hasBackend("hccl"), ERROR_INVALID_PARAM, opName, " param 'backend' is '", requested,
            "' but this atb_ops has no HCCL backend (no Ascend toolkit at build, and not under `python -m atb_ops "
            "run`), and ATB_OPS_STRICT_BACKEND=1 forbids running on another backend");
}

CommConfig configFromParam(const CommParam& p, const c10::Device& device) {
  CommConfig c;
  c.options = readOptions();
  c.backend = resolveBackend(p.backend, device, c.options);
  c.requestedBackend = p.backend;
  c.deviceType = device.type();
  c.deviceIndex = device.has_index() ? device.index() : -1;
  c.rank = p.rank;
  c.rankSize = p.rankSize;
  c.rankRoot = p.rankRoot;
  c.handle = p.hcclComm;
  if (c.handle != 0 && c.backend != "hccl" && c.backend != "nccl") {
    // Named here, where the backend that runs is known (shm and gloo would refuse it in their own words).
    ATB_CHECK(p.backend != "hccl" && p.backend != "lccl", ERROR_INVALID_PARAM, "param 'hcclComm' is ", c.handle,
              " with backend '", p.backend, "' on ", deviceName(c.deviceType), " tensors, which run on '", c.backend,
              "' here (no HCCL backend in this process), and it takes no handle. A handle from HCCL's C API on CPU "
              "(libhccl.so) is used under `python -m atb_ops run` or after `eval \"$(python -m atb_ops env)\"`; "
              "else leave hcclComm 0 and the operation makes its communicator");
    ATB_FAIL(ERROR_INVALID_PARAM, "param 'hcclComm' is ", c.handle, ": backend '", c.backend,
             "' takes no handle (hccl, lccl and nccl do); leave hcclComm 0 and the operation makes its communicator");
  }
  c.commMode = p.commMode;
  c.rankTableFile = p.rankTableFile;
  c.commDomain = p.commDomain;
  if (!p.rankTableFile.empty() && (c.backend == "shm" || c.backend == "gloo") && p.hcclComm == 0) {
    // The CPU backends meet as the table says (HCCL does this itself, in HcclCommInitClusterInfo).
    const RankTable table = readRankTable(p.rankTableFile);
    ATB_CHECK(static_cast<int64_t>(table.size) == p.rankSize, ERROR_INVALID_PARAM, "rankTableFile '", p.rankTableFile,
              "' lists ", table.size, " ranks but rankSize is ", p.rankSize);
    ATB_CHECK(p.rank >= 0 && p.rank < p.rankSize, ERROR_INVALID_PARAM, "rankTableFile '", p.rankTableFile, "' lists ",
              table.size, " ranks (rank_id 0-", table.size - 1, "); rank ", p.rank, " is not one of them");
    if (auto store = rankTableStore(table, static_cast<uint32_t>(p.rank), c.options)) {
      c.store = std::make_shared<GivenStore>(GivenStore{std::move(store)});
    } else {
      c.jobKey = "table:" + table.hash + "|" + defaultJobKey(c.options, c.commMode);
    }
  }
  return c;
}

}  // namespace atb_ops
