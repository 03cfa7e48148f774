// Fuzz target: any bytes offered as a ring file are turned into Flight Recorder dumps of every
// version (`ncclscope fr-export`), which must encode, and the 2.2 and 2.10 pickles must read back
// as the same dump (2.2 without pg_status): whatever a ring holds (names that are not UTF-8, counts
// and times at the ends of their ranges), the files written are ones torch's pickle.load reads.
// Seeds: a ring of one rank of a two-rank communicator with collectives, a coalesced group,
// send/recv and device starts.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/trace/temp_dir.h"
#include "trace/flight_recorder/fr_json.h"
#include "trace/flight_recorder/fr_write.h"
#include "trace/flight_recorder/pickle_reader.h"
#include "trace/ring_reader.h"
#include "trace/ring_writer.h"

using namespace ncclscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  auto ring = trace::ParseRing(data, size, "fuzz.ring", &error);
  if (!ring) return 0;
  for (const char* version : {"2.2", "2.7", "2.10"}) {
    exporters::fr::FrExportOptions options;
    options.version = version;
    options.buffer_size = 64;
    const auto dumps = exporters::fr::DumpsOfJob({&*ring}, options);
    for (const auto& d : dumps.ranks) {
      const std::string pickle =
          exporters::fr::EncodeFrFile(d.dump, exporters::fr::FrFormat::kPickle);
      auto tree = flight_recorder::ParsePickle(pickle.data(), pickle.size(), {}, &error);
      if (!tree) __builtin_trap();
      auto back = flight_recorder::DecodeFrDump(*tree, &error);
      if (!back) __builtin_trap();
      // 2.2 has every entry key but the thread's; pg_status came with 2.3, the NCCL version 2.7.
      flight_recorder::FrDump expected = d.dump;
      if (std::string(version) == "2.2") {
        expected.pg_status.clear();
        expected.comm_lib_version.clear();
      }
      if (std::string(version) != "2.7" && !(*back == expected)) __builtin_trap();
      const std::string json = exporters::fr::EncodeFrFile(d.dump, exporters::fr::FrFormat::kJson);
      if (!flight_recorder::ParseFrJson(json, &error)) __builtin_trap();
    }
  }
  return 0;
}

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  using namespace ncclscope::trace;
  ncclscope::testing::TempDir tmp;
  RingOptions o;
  o.dir = tmp.path();
  o.record_capacity = 32;
  o.comm_capacity = 2;
  o.global_rank = 0;
  o.world_size = 2;
  o.nccl_version = 22809;
  std::string error;
  auto w = RingWriter::Create(o, &error);
  if (!w) return;
  CommInfo c;
  c.id = 7;
  c.rank = 0;
  c.nranks = 2;
  c.name = "w\xC3";  // cut inside a UTF-8 character, as a long name is
  w->AddComm(c);
  auto op = [&](OpType type, uint64_t seq, uint64_t group, int64_t t, bool done) {
    RecordData r{};
    r.comm_id = 7;
    r.seq = seq;
    r.op = static_cast<uint32_t>(type);
    r.count = 64;
    r.dtype = 7;
    r.peer = IsP2P(type) ? 1 : -1;
    r.redop = type == OpType::kP2pDeviceStart ? static_cast<int32_t>(OpType::kSend) : 0;
    r.group_id = group;
    r.flags = group != 0 ? kFlagInGroup : 0;
    r.t_enter_ns = r.t_exit_ns = t;
    const uint64_t slot = w->Append(r, done);
    if (done) w->CompleteDevice(slot, t + 1000);
  };
  op(OpType::kAllReduce, 1, 0, 100, true);
  op(OpType::kDeviceStart, 1, 0, 150, false);
  op(OpType::kAllGather, 2, 5, 200, true);
  op(OpType::kReduceScatter, 3, 5, 210, false);
  op(OpType::kSend, 1, 0, 300, false);
  op(OpType::kP2pDeviceStart, 1, 0, 350, false);
  op(OpType::kRecv, 1, 6, 400, true);
  op(OpType::kSend, 2, 6, 410, true);
  op(OpType::kAlltoAll, 4, 0, 500, false);
  std::ifstream in(w->path(), std::ios::binary);
  seeds->emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
