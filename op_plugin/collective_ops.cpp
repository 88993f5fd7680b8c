// torch.ops.atb_ops.*: the collectives as dispatcher ops, so torch.compile and torch.library see them.
// Fake (meta) kernels and autograd are registered in python/atb_ops/_ops.py.
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "comm/communicator.h"
#include "core/dtype.h"
#include "core/layout.h"
#include "core/memory.h"
#include "core/status.h"
#include "op_plugin/gil_release.h"

namespace atb_ops {
namespace {

// Where the Python layer decided a group's collectives run (see python/atb_ops/_groups.py).
CommConfig configFor(const at::Tensor& x, const std::string& backend, const std::string& commDomain,
                     const std::string& jobKey, const std::string& groupName, int64_t rank, int64_t worldSize) {
  CommConfig c;
  c.backend = resolveBackend(backend, x.device().type());
  c.rank = static_cast<int32_t>(rank);
  c.rankSize = static_cast<int32_t>(worldSize);
  c.rankRoot = 0;
  c.commDomain = commDomain;
  c.jobKey = jobKey;
  c.groupName = c.backend == "gloo" ? groupName : "";
  c.deviceIndex = x.device().has_index() ? x.device().index() : -1;
  return c;
}

// x: any shape, contiguous; counts/displacements in elements of x flattened.
// returns: [sum(recv_counts)]
at::Tensor allToAllV(const at::Tensor& x, c10::IntArrayRef sendCounts, c10::IntArrayRef sdispls,
                     c10::IntArrayRef recvCounts, c10::IntArrayRef rdispls, c10::string_view backend,
                     c10::string_view commDomain, c10::string_view jobKey, c10::string_view groupName, int64_t rank,
                     int64_t worldSize) {
  checkSupportedDtype(x.scalar_type(), "all_to_all_v input x");
  ATB_CHECK(x.is_contiguous(), ERROR_INVALID_PARAM, "all_to_all_v input x must be contiguous (strides ", x.strides(),
            ")");
  const AllToAllVLayout layout{sendCounts.vec(), sdispls.vec(), recvCounts.vec(), rdispls.vec()};
  const int64_t total = validateLayout(layout, worldSize, x.numel());
  at::Tensor out = at::empty({total}, x.options());
  adviseHugePages(out);  // large outputs: fewer first-write page faults
  const CommConfig config = configFor(x, std::string(backend), std::string(commDomain), std::string(jobKey),
                                      std::string(groupName), rank, worldSize);
  GilRelease unlocked;
  getCommunicator(config)->alltoallv(x, layout, out);
  return out;
}

// x: [d0, *]; returns [worldSize * d0, *] (rank-order concatenation on dim 0).
at::Tensor allGather(const at::Tensor& x, c10::string_view backend, c10::string_view commDomain,
                     c10::string_view jobKey, c10::string_view groupName, int64_t rank, int64_t worldSize) {
  checkSupportedDtype(x.scalar_type(), "all_gather input x");
  ATB_CHECK(x.dim() >= 1, ERROR_INVALID_TENSOR_DIM, "all_gather input x needs at least 1 dimension, got shape ",
            x.sizes());
  ATB_CHECK(x.is_contiguous(), ERROR_INVALID_PARAM, "all_gather input x must be contiguous (strides ", x.strides(),
            ")");
  std::vector<int64_t> shape = x.sizes().vec();
  shape[0] *= worldSize;
  at::Tensor out = at::empty(shape, x.options());
  adviseHugePages(out);
  const CommConfig config = configFor(x, std::string(backend), std::string(commDomain), std::string(jobKey),
                                      std::string(groupName), rank, worldSize);
  GilRelease unlocked;
  getCommunicator(config)->allgather(x, out);
  return out;
}

}  // namespace
}  // namespace atb_ops

TORCH_LIBRARY_FRAGMENT(atb_ops, m) {
  m.def(
      "all_to_all_v(Tensor x, int[] send_counts, int[] sdispls, int[] recv_counts, int[] rdispls, str backend, "
      "str comm_domain, str job_key, str group_name, int rank, int world_size) -> Tensor");
  m.def(
      "all_gather(Tensor x, str backend, str comm_domain, str job_key, str group_name, int rank, int world_size) "
      "-> Tensor");
}

TORCH_LIBRARY_IMPL(atb_ops, CPU, m) {
  m.impl("all_to_all_v", &atb_ops::allToAllV);
  m.impl("all_gather", &atb_ops::allGather);
}

TORCH_LIBRARY_IMPL(atb_ops, CUDA, m) {
  m.impl("all_to_all_v", &atb_ops::allToAllV);
  m.impl("all_gather", &atb_ops::allGather);
}

TORCH_LIBRARY_IMPL(atb_ops, PrivateUse1, m) {
  m.impl("all_to_all_v", &atb_ops::allToAllV);
  m.impl("all_gather", &atb_ops::allGather);
}
