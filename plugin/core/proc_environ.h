// The environment another process started with, as /proc/<pid>/environ holds it: NAME=VALUE
// entries, each ended by a NUL. The kernel shows the block the process was started with; what the
// process set later (setenv, os.environ) is not in it.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace ncclscope::plugin {

// The entries of an environ block. An entry without '=' or with an empty name is skipped, a last
// entry without its NUL is taken as it is, and of two entries with one name the first wins (the one
// getenv finds). Pure; thread-safe.
std::map<std::string, std::string> ParseEnviron(std::string_view bytes);

// Reads /proc/<pid>/environ into *bytes. False, with *error naming the file and the reason
// ("/proc/12/environ: Permission denied", "... larger than 4194304 bytes"), when it cannot be read
// whole within max_bytes. Thread-safe.
bool ReadProcEnviron(int pid, size_t max_bytes, std::string* bytes, std::string* error);

}  // namespace ncclscope::plugin
