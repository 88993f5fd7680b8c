#include "core/options.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/status.h"

namespace atb_ops {
namespace {

std::optional<std::string> getEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

namespace env_parse {

bool flag(const std::string& name, const std::string& text) {
  const std::string v = lower(text);
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  ATB_FAIL(ERROR_INVALID_PARAM, name, " must be 1/0 (or true/false, yes/no, on/off), got '", text, "'");
}

std::chrono::milliseconds seconds(const std::string& name, const std::string& text) {
  char* end = nullptr;
  const double s = std::strtod(text.c_str(), &end);
  ATB_CHECK(end != text.c_str() && *end == '\0' && std::isfinite(s) && s > 0, ERROR_INVALID_PARAM, name,
            " must be a finite number of seconds > 0, got '", text, "'");
  const double maxSeconds = std::chrono::duration<double>(kMaxTimeout).count();
  if (s > maxSeconds) {
    TORCH_WARN_ONCE("atb_ops: ", name, "=", text, " s is more than 24 h; using 86400 s");
    return std::chrono::duration_cast<std::chrono::milliseconds>(kMaxTimeout);
  }
  const auto ms = static_cast<int64_t>(std::llround(s * 1000.0));
  ATB_CHECK(ms >= 1, ERROR_INVALID_PARAM, name, "=", text, " s is shorter than the 1 ms resolution of waits");
  return std::chrono::milliseconds(ms);
}

namespace {
int64_t ranged(const std::string& name, const std::string& text, int64_t lo, int64_t hi, const char* what) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  ATB_CHECK(end != text.c_str() && *end == '\0' && errno == 0 && v >= lo && v <= hi, ERROR_INVALID_PARAM, name,
            " must be ", what, " from ", lo, " to ", hi, ", got '", text, "'");
  return v;
}
}  // namespace

int64_t bytes(const std::string& name, const std::string& text, int64_t lo, int64_t hi) {
  return ranged(name, text, lo, hi, "a byte count");
}

int64_t integer(const std::string& name, const std::string& text, int64_t lo, int64_t hi) {
  return ranged(name, text, lo, hi, "an integer");
}

std::string choice(const std::string& name, const std::string& text, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (text == a) return text;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  ATB_FAIL(ERROR_INVALID_PARAM, name, " must be one of ", list, ", got '", text, "'");
}

}  // namespace env_parse

std::string Timeout::describe() const {
  std::ostringstream out;
  out << name() << (fromGroup ? " of " : "=") << seconds() << " s";
  return out.str();
}

Options readOptions() {
  Options o;
  if (auto v = getEnv("ATB_OPS_TIMEOUT")) {
    o.timeout.value = env_parse::seconds("ATB_OPS_TIMEOUT", *v);
    o.timeout.fromEnvironment = true;
  }
  if (auto v = getEnv("ATB_OPS_STRICT_BACKEND")) o.strictBackend = env_parse::flag("ATB_OPS_STRICT_BACKEND", *v);
  if (auto v = getEnv("ATB_OPS_STRICT_PARAMS")) o.strictParams = env_parse::flag("ATB_OPS_STRICT_PARAMS", *v);
  if (auto v = getEnv("ATB_OPS_SHM_EAGER")) o.shmEager = env_parse::bytes("ATB_OPS_SHM_EAGER", *v, 0, int64_t{1} << 20);
  if (auto v = getEnv("ATB_OPS_SHM_SPLIT")) o.shmSplit = env_parse::flag("ATB_OPS_SHM_SPLIT", *v);
  if (auto v = getEnv("ATB_OPS_RANK_TABLE_PORT"))
    o.rankTablePort = env_parse::integer("ATB_OPS_RANK_TABLE_PORT", *v, 1, 65535);
  if (auto v = getEnv("ATB_OPS_SHM_ARENA")) {
    o.shmArenaBytes = env_parse::bytes("ATB_OPS_SHM_ARENA", *v, 0, int64_t{1} << 46);
  }
  if (auto v = getEnv("ATB_OPS_HUGEPAGES")) o.hugePages = env_parse::flag("ATB_OPS_HUGEPAGES", *v);
  if (auto v = getEnv("ATB_OPS_HCCL_ALLTOALLV")) {
    const std::string c =
        env_parse::choice("ATB_OPS_HCCL_ALLTOALLV", *v, {"alltoallv", "native", "p2p", "batch_send_recv"});
    o.hcclAlltoallv = (c == "native") ? "alltoallv" : (c == "batch_send_recv" ? "p2p" : c);
  }
  if (auto v = getEnv("ATB_OPS_HCCL_BLOCKING")) o.hcclBlocking = env_parse::flag("ATB_OPS_HCCL_BLOCKING", *v);
  if (auto v = getEnv("ATB_OPS_TWO_LEVEL")) o.twoLevel = env_parse::flag("ATB_OPS_TWO_LEVEL", *v);
  if (auto v = getEnv("ATB_OPS_GLOO_STREAMS")) o.glooStreams = env_parse::integer("ATB_OPS_GLOO_STREAMS", *v, 1, 4);
  if (auto v = getEnv("ATB_OPS_CPU_PATH"))
    o.cpuPath = env_parse::choice("ATB_OPS_CPU_PATH", *v, {"auto", "shm", "group"});
  if (auto v = getEnv("ATB_OPS_SHM_DIR")) {
    ATB_CHECK(v->front() == '/', ERROR_INVALID_PARAM, "ATB_OPS_SHM_DIR must be an absolute path, got '", *v, "'");
    o.shmDir = *v;
  }
  o.npuName = getEnv("ATB_OPS_NPU_NAME").value_or("");
  o.jobId = getEnv("ATB_OPS_JOB_ID").value_or("");
  o.masterAddr = getEnv("MASTER_ADDR").value_or("");
  o.masterPort = getEnv("MASTER_PORT").value_or("");
  o.elasticRunId = getEnv("TORCHELASTIC_RUN_ID").value_or("");
  for (const char* name : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    if (auto v = getEnv(name); v && o.launcherLocalRanks < 0)
      o.launcherLocalRanks = env_parse::integer(name, *v, 1, 1 << 30);
  }
  o.launcherJob = launcherJobOf(getEnv);
  return o;
}

std::string launcherJobOf(const EnvLookup& env) {
  // PMIx (Open MPI 4+, Slurm with PMIx), Open MPI's ess, a Slurm job step.
  if (auto ns = env("PMIX_NAMESPACE")) return "pmix:" + *ns;
  if (auto ompi = env("OMPI_MCA_ess_base_jobid")) return "ompi:" + *ompi;
  auto job = env("SLURM_JOB_ID");
  auto step = env("SLURM_STEP_ID");
  if (job && step) return "slurm:" + *job + "." + *step;
  return "";
}

bool thisEnvironmentProvesJob() {
  return environmentProvesJob(getEnv);
}

bool environmentProvesJob(const EnvLookup& env) {
  if (env("ATB_OPS_JOB_ID")) return true;
  if (env("MASTER_ADDR") && env("MASTER_PORT") && env("TORCHELASTIC_RUN_ID")) return true;
  return !launcherJobOf(env).empty();
}

std::map<std::string, std::string> describeOptions(const Options& o) {
  auto onOff = [](bool b) { return std::string(b ? "1" : "0"); };
  return {
      {"ATB_OPS_TIMEOUT", std::to_string(o.timeout.seconds())},
      {"ATB_OPS_STRICT_BACKEND", onOff(o.strictBackend)},
      {"ATB_OPS_STRICT_PARAMS", onOff(o.strictParams)},
      {"ATB_OPS_SHM_EAGER", std::to_string(o.shmEager)},
      {"ATB_OPS_SHM_SPLIT", onOff(o.shmSplit)},
      {"ATB_OPS_SHM_ARENA", o.shmArenaBytes ? std::to_string(*o.shmArenaBytes) : std::string("")},
      {"ATB_OPS_HUGEPAGES", onOff(o.hugePages)},
      {"ATB_OPS_HCCL_ALLTOALLV", o.hcclAlltoallv},
      {"ATB_OPS_HCCL_BLOCKING", onOff(o.hcclBlocking)},
      {"ATB_OPS_TWO_LEVEL", onOff(o.twoLevel)},
      {"ATB_OPS_GLOO_STREAMS", std::to_string(o.glooStreams)},
      {"ATB_OPS_CPU_PATH", o.cpuPath},
      {"ATB_OPS_SHM_DIR", o.shmDir},
      {"ATB_OPS_JOB_ID", o.jobId},
      {"ATB_OPS_RANK_TABLE_PORT", std::to_string(o.rankTablePort)},
  };
}

}  // namespace atb_ops
