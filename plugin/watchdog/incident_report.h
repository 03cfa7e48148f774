// What the watchdog prints on stderr for each stage of an incident: one line for a suspect (someone
// may look, nobody should act), a block for a confirmed hang (the headline and its evidence, the
// other verdicts' headlines, where the verdict file is), one line when the incident ends. Pure;
// thread-safe.
#pragma once

#include <string>

#include "hang_detector/incident/incident_record.h"
#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::plugin {

std::string VerdictBlock(const hang_detector::Analysis& a, const std::string& verdict_path,
                         int rank, int pid);

// "ncclscope: watchdog of rank R (pid P): SUSPECT (...) ...; <what would confirm it>; <path>".
std::string SuspectLine(const hang_detector::Analysis& a, const std::string& verdict_path, int rank,
                        int pid);

// "... resolved: <comm> <op> #<seq> progressed after 12.3 s (confirmed by time, then progressed);
// <path> says so".
std::string ResolvedLine(const hang_detector::IncidentRecord& r, double lasted_s,
                         const std::string& verdict_path, int rank, int pid);

}  // namespace ncclscope::plugin
