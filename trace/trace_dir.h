// The trace directory: private to its user, because records reveal the job's behaviour.
#pragma once

#include <string>
#include <vector>

namespace ncclscope::trace {

// The watchdog's verdict, written into the trace directory beside the ring files (a JSON object:
// readers of the directory that sniff for other files must not take it for one of theirs).
inline constexpr const char* kVerdictFileName = "verdict.json";

// Creates dir (and missing parents) with mode 0700. Fails, with *error naming the path and the
// reason, when it cannot be created, is not a directory, is not owned by this user, or is
// accessible by group/others. A symlink owned by this user (or root) is followed and its target
// checked the same way; the error then names both. Thread-safe.
bool EnsurePrivateDir(const std::string& dir, std::string* error);

// base/below[0]/below[1]/...: the layout <base>/<job>/<host> (job_layout.h). Every level below base
// is created 0700 and checked as EnsurePrivateDir checks a directory, one level at a time, so no
// level is reached through another user's symlink. With private_base, base too (a default base in
// the shared /tmp); without, base (a directory the user named) is created 0700 when missing and
// only has to be a directory, reached through no symlink of another user: a group's shared
// directory is a fine base. Sets *dir to the full path. Thread-safe.
bool EnsurePrivateSubdirs(const std::string& base, bool private_base,
                          const std::vector<std::string>& below, std::string* dir,
                          std::string* error);

}  // namespace ncclscope::trace
