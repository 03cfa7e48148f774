// Reads one variable out of the environment a launcher builds for a rank (a NAME=VALUE list).
#pragma once

#include <string>
#include <vector>

namespace ncclscope::sim::testing {

// The value of `name` in `env`, or "<unset>" when `env` has no such variable. Pure function.
inline std::string lookup(const std::vector<std::string>& env, const std::string& name) {
  for (const std::string& kv : env) {
    if (kv.rfind(name + "=", 0) == 0) return kv.substr(name.size() + 1);
  }
  return "<unset>";
}

}  // namespace ncclscope::sim::testing
