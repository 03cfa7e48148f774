#include "sim/scenario/accel_env.h"

#include <cstring>

namespace ncclscope::sim {
namespace {

// The value of NAME in a NAME=value list; null when absent.
const char* lookup(char** base, const std::string& name) {
  for (char** e = base; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, name.c_str(), name.size()) == 0 && (*e)[name.size()] == '=') {
      return *e + name.size() + 1;
    }
  }
  return nullptr;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> accelEnvironment(const AccelSpec& accel) {
  std::vector<std::pair<std::string, std::string>> env;
  env.emplace_back("NCCLSCOPE_ACCEL", accel.enabled ? "1" : "0");
  if (accel.buffer_bytes) {
    env.emplace_back("NCCLSCOPE_ACCEL_BUFFER", std::to_string(*accel.buffer_bytes));
  }
  if (accel.timeout_ms) {
    env.emplace_back("NCCLSCOPE_ACCEL_TIMEOUT_MS", std::to_string(*accel.timeout_ms));
  }
  return env;
}

std::string describeAccelEnvironment(const std::vector<std::pair<std::string, std::string>>& wanted,
                                     char** base) {
  std::string ours, kept;
  for (const auto& [name, value] : wanted) {
    const char* have = lookup(base, name);
    std::string& list = have == nullptr ? ours : kept;
    list += (list.empty() ? "" : ", ") + name + "=" + (have == nullptr ? value : have);
  }
  std::string line = "accel from the scenario: " + (ours.empty() ? std::string("none") : ours);
  if (!kept.empty()) line += "; kept from the environment: " + kept;
  return line;
}

}  // namespace ncclscope::sim
