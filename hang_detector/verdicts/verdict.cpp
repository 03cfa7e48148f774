#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::hang_detector {

const char* VerdictClassName(VerdictClass c) {
  switch (c) {
    case VerdictClass::kHealthy:
      return "healthy";
    case VerdictClass::kStraggler:
      return "straggler";
    case VerdictClass::kDeviceStall:
      return "device-stall";
    case VerdictClass::kMissing:
      return "missing";
    case VerdictClass::kDesync:
      return "desync";
    case VerdictClass::kP2PDeadlock:
      return "p2p-deadlock";
    case VerdictClass::kInitHang:
      return "init-hang";
    case VerdictClass::kFrozen:
      return "frozen";
    case VerdictClass::kDead:
      return "dead";
    case VerdictClass::kNanOrigin:
      return "nan-origin";
    case VerdictClass::kCorruptOutput:
      return "corrupt-output";
  }
  return "unknown";
}

bool IsHang(VerdictClass c) {
  return c != VerdictClass::kHealthy && c != VerdictClass::kStraggler && !IsNumerics(c);
}

bool IsNumerics(VerdictClass c) {
  return c == VerdictClass::kNanOrigin || c == VerdictClass::kCorruptOutput;
}

const char* FindingStage(VerdictClass c) {
  if (c == VerdictClass::kStraggler) return "straggler";
  return IsNumerics(c) ? "numerics" : "healthy";
}

bool IsConfirmedHang(const Verdict& v) {
  return IsHang(v.cls) && v.confirmed;
}

bool IsSuspect(const Verdict& v) {
  return IsHang(v.cls) && !v.confirmed;
}

const char* StageName(const Analysis& analysis) {
  if (!analysis.usable) return "unusable";
  if (analysis.verdicts.empty()) return "healthy";
  const Verdict& first = analysis.verdicts.front();
  if (IsConfirmedHang(first)) return "hang";
  if (IsSuspect(first)) return "suspect";
  return FindingStage(first.cls);
}

int ExitCode(const Analysis& analysis) {
  if (!analysis.usable) return 3;
  int code = 0;
  for (const Verdict& v : analysis.verdicts) {
    if (IsConfirmedHang(v)) return 2;
    if (IsSuspect(v)) code = 4;
    // Slow or computing wrong numbers: the job goes on, so never the exit code of a hang.
    if ((v.cls == VerdictClass::kStraggler || IsNumerics(v.cls)) && code == 0) code = 1;
  }
  return code;
}

}  // namespace ncclscope::hang_detector
