// The ring file this test process wrote (the probe writes one per process into the trace
// directory), and its records of one type on one communicator: how the plugin's in-process tests
// read back what the probe recorded.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "trace/record.h"
#include "trace/ring_reader.h"

namespace ncclscope::testing {

inline trace::RingSnapshot OwnRing(const std::string& dir, pid_t pid = getpid()) {
  std::string error;
  for (const std::string& path : trace::ListRingFiles(dir, &error)) {
    auto snap = trace::ReadRingFile(path, &error);
    if (snap && snap->pid == pid) return *snap;
  }
  ADD_FAILURE() << "no ring file of pid " << pid << " in " << dir << ": " << error;
  return {};
}

inline std::vector<trace::RecordData> RecordsOf(const std::string& dir, trace::OpType op,
                                                uint64_t comm_id) {
  std::vector<trace::RecordData> out;
  for (const trace::StoredRecord& r : OwnRing(dir).records) {
    if (r.data.op == static_cast<uint32_t>(op) && r.data.comm_id == comm_id) out.push_back(r.data);
  }
  return out;
}

}  // namespace ncclscope::testing
