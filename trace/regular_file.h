// Opening a file found by listing a directory, without trusting what the entry is. Opening a FIFO
// blocks until a writer appears (analyze, dump, a scrape and the in-process watchdog would hang);
// opening a device can have side effects (a tape rewinds, a watchdog device arms). So the type is
// checked before anything is opened, and again on the descriptor. Thread-safe.
#pragma once

#include <sys/stat.h>

#include <string>

namespace ncclscope::trace {

// Opens `path` read-only (close-on-exec) when it is, or is a symlink to, a regular file, and fills
// *st from the open descriptor. Otherwise returns -1 and sets *why, without the path: "not a
// regular file (fifo)", "dangling symlink", "cannot open: <errno text>". The caller closes the fd.
int OpenRegularFile(const std::string& path, struct stat* st, std::string* why);

// "fifo", "character device", "directory", ...: what a non-regular entry is, for messages.
const char* FileKind(mode_t mode);

}  // namespace ncclscope::trace
