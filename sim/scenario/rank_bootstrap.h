// How ranks agree on the world communicator's ncclUniqueId: rank 0 publishes it as a file in the
// run directory, the others wait for it (bounded).
#pragma once

#include <nccl.h>

#include <string>

namespace ncclscope::sim {

// Path of the id file of a job: <run_dir>/ncclsim-<tag>.uniqueid (the tag keeps reruns in the same
// directory from reading a stale id).
std::string uniqueIdPath(const std::string& run_dir, const std::string& job_tag);

// Writes the id atomically (temporary file + rename), so a reader never sees half of it.
// Returns false and sets `error` on failure. Thread-safe for distinct paths.
bool publishUniqueId(const std::string& path, const ncclUniqueId& id, std::string& error);

// Polls for the file until it holds a whole id or timeout_s passes; on expiry `error` says which
// file it waited for, how long, and that rank 0 writes it.
bool waitUniqueId(const std::string& path, double timeout_s, ncclUniqueId& id, std::string& error);

}  // namespace ncclscope::sim
