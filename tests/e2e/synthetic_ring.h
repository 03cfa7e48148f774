// Ring files written directly by trace::RingWriter, for CLI tests that need a header no emulated
// job writes (a world size of two million, say). Thread-compatible.
#pragma once

#include <string>

namespace ncclscope::testing {

// Writes one ring file into dir for `rank` of a job whose header claims `world_size` ranks: a
// world communicator and `collectives` completed allreduces on it. Returns its path ("" and a test
// failure when it cannot be written).
std::string WriteSyntheticRing(const std::string& dir, int rank, int world_size,
                               int collectives = 3);

}  // namespace ncclscope::testing
