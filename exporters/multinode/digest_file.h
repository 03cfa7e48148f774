// The shared-filesystem transport of node digests: a digest file replaced atomically, so a reader
// on another node sees the old digest or the new one, never a mix (rename is atomic on POSIX file
// systems and on NFS, and makes the new file visible to other clients on their next lookup).
#pragma once

#include <string>

namespace ncclscope::exporters {

// Writes `bytes` to a temporary file next to `path` (mode 0600), fsyncs it, renames it over `path`
// and fsyncs the directory. Returns false with *error ("<path>: <why>") and leaves no temporary
// file behind when any step fails. Thread-safe for distinct paths.
bool WriteFileAtomically(const std::string& path, const std::string& bytes, std::string* error);

}  // namespace ncclscope::exporters
