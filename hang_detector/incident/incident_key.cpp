#include "hang_detector/incident/incident_key.h"

#include <cinttypes>
#include <cstdio>

namespace ncclscope::hang_detector {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

uint64_t HashText(uint64_t h, const std::string& s) {
  for (const char c : s) h = Mix(h, static_cast<unsigned char>(c));
  return h;
}

}  // namespace

uint64_t JobKey(const std::string& job_id, uint32_t restart) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto add = [&h](char c) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  };
  for (const char c : job_id) add(c);
  if (restart != 0) {
    // A job id holds no '#' (trace::SafePathComponent): "job#1" is no other job's id.
    add('#');
    for (const char c : std::to_string(restart)) add(c);
  }
  return h;
}

uint64_t IncidentKey(const Verdict& v) {
  uint64_t h = 0x6e63636c73636f70ULL;
  if (v.comm_id != 0) {
    h = Mix(h, v.comm_id);
    h = HashText(h, v.op);
    return Mix(h, v.seq);
  }
  h = HashText(h, VerdictClassName(v.cls));
  for (const int r : v.culprits) h = Mix(h, static_cast<uint64_t>(r));
  return h;
}

std::string Hex16(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

}  // namespace ncclscope::hang_detector
