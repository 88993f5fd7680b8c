// atb_ops._testing: test-only bindings (mocks of the vendor APIs, pure functions of the core). Built beside
// atb_ops._C but never imported by atb_ops; wheels leave it out (ATB_OPS_TESTING=0).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <torch/csrc/utils/pybind.h>

#include "comm/shm/split_planner.h"
#include "core/layout.h"
#include "core/options.h"
#include "op_plugin/python/python_errors.h"

namespace py = pybind11;

namespace atb_ops {
void bindHcclMock(py::module_& m);
void bindNcclMock(py::module_& m);
}  // namespace atb_ops

PYBIND11_MODULE(_testing, m) {
  m.doc() = "atb_ops test-only bindings: vendor API mocks and pure functions of the native core";
  atb_ops::bindHcclMock(m);
  atb_ops::bindNcclMock(m);

  m.def(
      "plan_split",
      [](int32_t n, std::vector<uint64_t> direct, std::vector<uint64_t> eager, std::vector<uint64_t> self,
         std::vector<uint8_t> pullMemcpy, std::vector<uint8_t> pushMemcpy, bool split) {
        atb_ops::shm::SplitInput in;
        in.n = n;
        in.direct = std::move(direct);
        in.eager = std::move(eager);
        in.self = std::move(self);
        in.pullMemcpy = std::move(pullMemcpy);
        in.pushMemcpy = std::move(pushMemcpy);
        in.split = split;
        std::vector<uint64_t> pushed;
        atb_ops::shm::planSplit(in, pushed);
        return pushed;
      },
      py::arg("n"), py::arg("direct"), py::arg("eager"), py::arg("self"), py::arg("pull_memcpy"),
      py::arg("push_memcpy"), py::arg("split") = true,
      "shm's split planner (csrc/comm/shm/split_planner.h): the tail bytes each sender pushes, [src * n + dst].");
  m.def("min_split_bytes", [] { return atb_ops::shm::kMinSplitBytes; });
  m.def(
      "parse_seconds",
      [](const std::string& name, const std::string& text) {
        return atb_ops::withPythonErrors([&] { return atb_ops::env_parse::seconds(name, text).count(); });
      },
      "ATB_OPS_TIMEOUT's parser: milliseconds.");
  m.def("parse_flag", [](const std::string& name, const std::string& text) {
    return atb_ops::withPythonErrors([&] { return atb_ops::env_parse::flag(name, text); });
  });
  m.def("format_ranks", &atb_ops::formatRanks);
}
