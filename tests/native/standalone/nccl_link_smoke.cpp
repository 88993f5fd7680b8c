// Links the real NcclApi (csrc/comm/nccl/cuda/nccl_api_impl.cpp) and the backend logic against libnccl and
// runs what works on any machine: NCCL's error strings, drawing a unique id, and creating a one-rank
// communicator, which without a GPU must fail as ERROR_NCCL_FAIL carrying NCCL's own words, with nothing
// leaked. Built and run by scripts/compile_check_nccl.sh --link; prints one line per check, exits non-zero on a
// failure.
#include <c10/util/Exception.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "comm/nccl/nccl_api.h"
#include "comm/nccl/nccl_comm.h"

namespace {

using atb_ops::nccl::NcclResult;

int failures = 0;

void report(bool ok, const std::string& what) {
  std::printf("[%s] %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}

// One rank needs no exchange: the root's own id is the only one.
class SelfBootstrap final : public atb_ops::Bootstrap {
 public:
  std::string broadcast(const std::string& payload) override { return payload; }
  std::string describe() const override { return "one rank, no exchange"; }
  std::vector<std::string> rankHosts() override { return {"this host"}; }
  void fail(const std::string&) override {}
};

}  // namespace

int main() {
  atb_ops::nccl::NcclApi& api = atb_ops::nccl::realNcclApi();

  for (int r = 0; r <= 7; ++r) {
    const char* text = api.getErrorString(static_cast<NcclResult>(r));
    report(text != nullptr && std::strlen(text) > 0,
           "ncclGetErrorString(" + std::to_string(r) + ") = '" + (text ? text : "(null)") + "'");
  }

  atb_ops::nccl::UniqueId id;
  const NcclResult drawn = api.getUniqueId(&id);
  bool nonzero = false;
  for (char c : id.bytes) nonzero = nonzero || c != 0;
  report(drawn == NcclResult::Success && nonzero, "ncclGetUniqueId -> " + std::to_string(static_cast<int>(drawn)) +
                                                      ", id " + atb_ops::nccl::toHex(id).substr(0, 16) + "...");

  SelfBootstrap bootstrap;
  try {
    auto comm = atb_ops::nccl::NcclComm::create(api, 0, 1, 0, bootstrap, atb_ops::Timeout{std::chrono::seconds(30)});
    report(comm->owned(), "one-rank communicator created (a GPU is present); destroyed on scope exit");
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    report(message.rfind("ERROR_NCCL_FAIL: ", 0) == 0 || message.rfind("ERROR_COMM_TIMEOUT: ", 0) == 0,
           "no GPU: creation raised: " + message);
  }
  std::printf("%s\n", failures == 0 ? "nccl link smoke: all checks passed" : "nccl link smoke: FAILED");
  return failures == 0 ? 0 : 1;
}
