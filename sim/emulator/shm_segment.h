// POSIX shared memory objects through which the ranks of one communicator meet. Every name starts
// with "/ncclsim-<job tag>-" (tag from NCCLSIM_JOB_TAG, default "default") so a launcher can
// remove what a crashed job left in /dev/shm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ncclsim {

// Name of the segment of the communicator whose unique-id hash is `id_hash`. Thread-safe.
std::string segmentName(uint64_t id_hash);

// A mapping of a shared memory object. Owned by the caller; release with unmapSegment.
struct ShmMapping {
  void* base = nullptr;
  size_t bytes = 0;
};

// Opens (creating if needed) object `name`, grows it to at least `bytes` (never shrinks it: another
// rank may already use a larger size) and maps it. Returns false with a reason in *err.
// Thread-safe.
bool mapSegment(const std::string& name, size_t bytes, ShmMapping* out, std::string* err);

// Unmaps; the object itself stays until unlinkSegment. Thread-safe.
void unmapSegment(ShmMapping* m);

// Removes the name; ranks that mapped it keep their mapping. Missing names are fine. Thread-safe.
void unlinkSegment(const std::string& name);

}  // namespace ncclsim
