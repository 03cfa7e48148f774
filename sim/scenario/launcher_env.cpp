#include "sim/scenario/launcher_env.h"

#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "trace/job_layout.h"

namespace ncclscope::sim {

std::vector<std::string> rankEnvironment(const JobEnv& job, int rank, char** base) {
  std::map<std::string, std::string> env;
  for (char** e = base; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : job.defaults) env.try_emplace(k, v);
  env["NCCLSIM_JOB_TAG"] = job.tag;
  env["NCCLSCOPE_JOB_ID"] = job.job_id;
  env["NCCLSCOPE_DIR"] = job.trace_dir;
  env["NCCLSCOPE_SIM_RUN_DIR"] = job.run_dir;
  env["RANK"] = std::to_string(rank);
  env["WORLD_SIZE"] = std::to_string(job.nranks);
  if (job.node_dirs.empty()) {
    // One simulated node holds the whole job, as on a single multi-GPU machine.
    env["LOCAL_RANK"] = std::to_string(rank);
    env["LOCAL_WORLD_SIZE"] = std::to_string(job.nranks);
  } else {
    // Each node as a machine of its own would be: its host name, its own trace directory (ring
    // files never leave their node), ranks numbered from 0 on it.
    const int per_node = job.nranks / static_cast<int>(job.node_dirs.size());
    const int node = rank / per_node;
    env["NCCLSCOPE_HOST"] = NodeHost(node);
    env["NCCLSCOPE_DIR"] = job.node_dirs[static_cast<size_t>(node)];
    env["LOCAL_RANK"] = std::to_string(rank % per_node);
    env["LOCAL_WORLD_SIZE"] = std::to_string(per_node);
  }
  if (!job.probe.empty()) {
    const auto old = env.find("LD_PRELOAD");
    env["LD_PRELOAD"] =
        old == env.end() || old->second.empty() ? job.probe : job.probe + ":" + old->second;
    // The probe is also NCCL's profiler plugin (device start events); a user's choice stays.
    env.try_emplace("NCCL_PROFILER_PLUGIN", job.probe);
    // And the NVTX injection: each record names the step and phase the rank was in.
    env.try_emplace("NVTX_INJECTION64_PATH", job.probe);
  }
  for (const auto& [k, v] : job.extra) env[k] = v;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::string simJobId(const std::string& tag, const char* env_job_id) {
  if (env_job_id == nullptr || *env_job_id == '\0') return "sim-" + tag;
  return trace::SafePathComponent(env_job_id, "local");
}

std::string NodeHost(int node) {
  return "node" + std::to_string(node);
}

std::string newJobTag() {
  uint64_t noise = 0;
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  urandom.read(reinterpret_cast<char*>(&noise), sizeof noise);
  noise ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return fmt::format("{:x}{:06x}", static_cast<unsigned>(getpid()), noise & 0xffffff);
}

std::string selfExeDir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

}  // namespace ncclscope::sim
