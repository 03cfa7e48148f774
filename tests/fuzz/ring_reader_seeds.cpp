// Seeds for the ring reader fuzz target: real ring files written by the real writer.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/trace/temp_dir.h"
#include "trace/ring_writer.h"

namespace {

// A ring whose operations carry NVTX contexts (trace/record.h, "NVTX context") after the records
// naming them, one name cut inside a UTF-8 character: mutations reach the exporter's phases.
void NvtxSeed(const ncclscope::testing::TempDir& tmp, std::vector<std::string>* seeds) {
  using namespace ncclscope::trace;
  RingOptions o;
  o.dir = tmp.path() + "/nvtx";
  o.record_capacity = 32;
  o.comm_capacity = 2;
  std::string error;
  auto w = RingWriter::Create(o, &error);
  if (!w) return;
  CommInfo c;
  c.id = 7;
  c.name = "world";
  w->AddComm(c);
  const char* phases[] = {"forward", "backward", "caf\xC3"};
  for (uint32_t id = 1; id <= 3; ++id) {
    for (const OpType op : {OpType::kNvtxPhaseName, OpType::kNvtxRangeName}) {
      RecordData n{};
      n.op = static_cast<uint32_t>(op);
      n.seq = id;
      const std::string name = op == OpType::kNvtxPhaseName ? phases[id - 1] : "layer";
      std::memcpy(&n.group_id, name.data(), std::min(name.size(), kNvtxNameBytes));
      w->Append(n, false);
    }
  }
  for (uint32_t i = 0; i < 12; ++i) {
    RecordData r{};
    r.op = static_cast<uint32_t>(OpType::kAllReduce);
    r.comm_id = 7;
    r.seq = i + 1;
    r.count = 256;
    r.dtype = 7;
    r.t_enter_ns = int64_t{1000000} * (i + 1);
    r.t_exit_ns = r.t_enter_ns + 1000;
    r.reserved = NvtxReservedWord(NvtxStepField(i / 4), i % 4);  // context 0: outside a phase
    w->CompleteDevice(w->Append(r, true), r.t_enter_ns + 500000);
  }
  std::ifstream in(w->path(), std::ios::binary);
  seeds->emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  using namespace ncclscope::trace;
  ncclscope::testing::TempDir tmp;
  RingOptions o;
  o.dir = tmp.path();
  o.record_capacity = 64;
  o.comm_capacity = 4;
  std::string error;
  auto w = RingWriter::Create(o, &error);
  if (!w) return;
  CommInfo c;
  c.id = 7;
  c.name = "world";
  w->AddComm(c);
  RecordData r{};
  for (int i = 0; i < 100; ++i) w->Append(r, i % 2 == 0);  // wraps
  std::ifstream in(w->path(), std::ios::binary);
  seeds->emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  NvtxSeed(tmp, seeds);
  // A presence file: one table entry, one record slot, the presence flag (RingOptions::presence).
  RingOptions p;
  p.dir = tmp.path() + "/presence";
  p.presence = true;
  p.global_rank = 7;
  p.world_size = 8;
  p.job_id = "fuzz";
  if (auto presence = RingWriter::Create(p, &error)) {
    std::ifstream pin(presence->path(), std::ios::binary);
    seeds->emplace_back(std::istreambuf_iterator<char>(pin), std::istreambuf_iterator<char>());
  }
}
