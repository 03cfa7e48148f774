// Slurm's compressed host lists (SLURM_JOB_NODELIST, SLURM_NODELIST), expanded to host names:
// "gpu[001-004,010],login1" is gpu001 ... gpu004, gpu010, login1. The exporter finds its peers
// with it (`--peers-from slurm`, peer_sources.h). Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ncclscope::exporters {

// More hosts than any cluster has: a list that expands beyond it is refused, not allocated.
inline constexpr size_t kMaxHostlistHosts = size_t{1} << 20;

// Expands `list`: host names separated by commas; a bracket holds comma-separated numbers and
// ranges "a-b" (a <= b), zero-padded to the width of a range's lower bound ("[08-10]": 08 09 10);
// several brackets in one name multiply ("r[1-2]n[1-2]": r1n1 r1n2 r2n1 r2n2). Appends the hosts
// in order to *out; duplicates are kept (the caller decides). Returns false with *error saying
// what is wrong and where (the offending part of the list), *out unchanged.
bool ExpandHostlist(const std::string& list, std::vector<std::string>* out, std::string* error);

}  // namespace ncclscope::exporters
