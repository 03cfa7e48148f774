#include "plugin/watchdog/incident_report.h"

#include <cstdio>

#include "hang_detector/incident/incident_lifecycle.h"
#include "hang_detector/verdicts/verdict_text.h"

namespace ncclscope::plugin {
namespace {

std::string Head(int rank, int pid) {
  return "ncclscope: watchdog of rank " + std::to_string(rank) + " (pid " + std::to_string(pid) +
         "): ";
}

}  // namespace

std::string VerdictBlock(const hang_detector::Analysis& a, const std::string& verdict_path,
                         int rank, int pid) {
  constexpr size_t kMaxEvidence = 4;
  const std::string head = Head(rank, pid);
  std::string out;
  for (size_t i = 0; i < a.verdicts.size(); ++i) {
    const hang_detector::Verdict& v = a.verdicts[i];
    out += head + hang_detector::VerdictHeadline(v) + "\n";
    if (i != 0) continue;
    for (size_t e = 0; e < v.evidence.size() && e < kMaxEvidence; ++e) {
      out += "ncclscope:   rank " + std::to_string(v.evidence[e].rank) + ": " + v.evidence[e].text +
             "\n";
    }
    if (v.evidence.size() > kMaxEvidence) {
      out += "ncclscope:   (" + std::to_string(v.evidence.size() - kMaxEvidence) + " more)\n";
    }
  }
  out += "ncclscope: verdict written to " + verdict_path + "\n";
  return out;
}

std::string SuspectLine(const hang_detector::Analysis& a, const std::string& verdict_path, int rank,
                        int pid) {
  const hang_detector::Verdict& v = a.verdicts.front();
  return Head(rank, pid) + hang_detector::VerdictHeadline(v) + "; " + v.confirmed_by + "; " +
         verdict_path + "\n";
}

std::string ResolvedLine(const hang_detector::IncidentRecord& r, double lasted_s,
                         const std::string& verdict_path, int rank, int pid) {
  std::string what = r.comm_name.empty() ? r.cls : r.comm_name;
  if (r.op != "-") what += " " + r.op + " #" + std::to_string(r.seq);
  char after[48];
  std::snprintf(after, sizeof after, "%.1f s", lasted_s);
  return Head(rank, pid) + "resolved: " + what + " progressed after " + after + " (" +
         hang_detector::Resolution(r) + "); " + verdict_path + " says so\n";
}

}  // namespace ncclscope::plugin
