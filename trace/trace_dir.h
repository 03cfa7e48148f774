// The trace directory: private to its user, because records reveal the job's behaviour.
#pragma once

#include <string>

namespace ncclscope::trace {

// Creates dir (and missing parents) with mode 0700. Fails, with *error naming the path and the
// reason, when it cannot be created, is not a directory, is not owned by this user, or is
// accessible by group/others. A symlink owned by this user (or root) is followed and its target
// checked the same way; the error then names both. Thread-safe.
bool EnsurePrivateDir(const std::string& dir, std::string* error);

}  // namespace ncclscope::trace
