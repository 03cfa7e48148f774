// Which dump version has which key: the versions whose dumper source we read (2.2, 2.3, 2.4,
// 2.7, 2.10 in pytorch/pytorch: c10d/NCCLUtils.hpp, FlightRecorder.hpp, FlightRecorderDetail.hpp).
// A key is required from the version that has it; older versions may lack it. Shared by the
// decoder and the encoder so both read the same table.
#pragma once

#include "trace/flight_recorder/fr_dump.h"

namespace ncclscope::flight_recorder::fr_versions {

// Every entry key but thread_id and thread_name is there from the oldest: 2.2's dumper already
// writes input_dtypes, output_dtypes, timeout_ms and is_p2p (NCCLUtils.hpp at version_val "2.2",
// NCCLTraceBuffer::getCollectiveTrace and getCollectiveTraceJson).
inline constexpr FrVersion kOldest{2, 2};
// pg_status at top level (2.3's key).
inline constexpr FrVersion kPgStatus{2, 3};
// The NCCL version at top level under "nccl_version" (2.7's FlightRecorder.hpp) ...
inline constexpr FrVersion kNcclVersionKey{2, 7};
// ... renamed "comm_lib_version", with the entry keys thread_id and thread_name (2.10).
inline constexpr FrVersion kCommLibAndThreads{2, 10};

}  // namespace ncclscope::flight_recorder::fr_versions
