// The trace directories one command reads together: a job's node directories, each copied from
// its node for a post-mortem (`ncclscope analyze job42/node1 job42/node2`), read as one job.
#pragma once

#include <string>
#include <vector>

namespace ncclscope::tools {

// How messages name them: "a", "a and b", "a, b and c", "a, b, c and 5 more". Pure.
std::string NameDirs(const std::vector<std::string>& dirs);

// False with *error when one directory is given twice, under the same name or another (a symlink,
// "d" and "d/"): its files would be read twice and every rank in it seen twice. A directory that
// cannot be looked at is left to the readers, which say why. Thread-safe.
bool EachDirOnce(const std::vector<std::string>& dirs, std::string* error);

// The checks of the commands that read trace directories only: every one is a directory, and
// each is given once. False with *error ("<dir>: not a readable directory", or EachDirOnce's)
// otherwise. Thread-safe.
bool ReadableDirsOnce(const std::vector<std::string>& dirs, std::string* error);

}  // namespace ncclscope::tools
