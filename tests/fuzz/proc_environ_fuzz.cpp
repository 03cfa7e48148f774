// Fuzz target: any bytes offered as another process's /proc/<pid>/environ, which the probe reads at
// load to tell a rank from a process the rank started (plugin/core/presence.h). Parsing never
// crashes; what it keeps renders back to bytes that parse to the same entries (names non-empty,
// without '=' or NUL; values without NUL), and the rank and job size read from them are a plausible
// pair or unknown.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/core/launch_env.h"
#include "plugin/core/presence.h"
#include "plugin/core/proc_environ.h"

namespace pl = ncclscope::plugin;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::map<std::string, std::string> vars = pl::ParseEnviron(bytes);
  std::string rendered;
  for (const auto& [name, value] : vars) {
    if (name.empty() || name.find('=') != std::string::npos ||
        name.find('\0') != std::string::npos || value.find('\0') != std::string::npos) {
      __builtin_trap();
    }
    rendered += name + "=" + value + '\0';
  }
  if (pl::ParseEnviron(rendered) != vars) __builtin_trap();
  const pl::EnvLookup lookup = [&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  std::vector<std::string> warnings;
  const pl::LaunchRank rank = pl::ReadLaunchRank(lookup, &warnings);
  if (rank.global_rank < -1 || rank.world_size < -1 || rank.world_size == 0) __builtin_trap();
  // A process whose parent was started as its own rank is never one that stands for it.
  if (pl::StandsForItsRank(rank, rank)) __builtin_trap();
  return 0;
}

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  using namespace std::string_literals;
  seeds->push_back("RANK=3\0WORLD_SIZE=8\0LOCAL_RANK=3\0PATH=/usr/bin:/bin\0"s);
  seeds->push_back("OMPI_COMM_WORLD_RANK=2\0OMPI_COMM_WORLD_SIZE=4\0HOME=/root\0"s);
  seeds->push_back("SLURM_PROCID=1\0SLURM_NTASKS=2\0SLURM_JOB_ID=42\0=x\0noequals\0RANK=-1"s);
}
