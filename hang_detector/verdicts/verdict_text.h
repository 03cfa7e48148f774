// Verdicts as short text a person reads in five seconds: one headline per verdict, its evidence
// indented below, then what each communicator waits on and what the input lacked. Pure functions;
// thread-safe. libstdc++ only, so the in-process watchdog can log the same lines.
#pragma once

#include <string>

#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::hang_detector {

// "HANG (missing) comm tp (3f2a…) allreduce #3: rank 5 never issued it; ranks 4 wait; since 12.3 s"
std::string VerdictHeadline(const Verdict& v);
std::string RenderText(const Analysis& analysis, bool verbose);

}  // namespace ncclscope::hang_detector
