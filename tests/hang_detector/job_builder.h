// Builds the ring snapshots of a synthetic job in memory, record by record, so each test states
// exactly the trace a fault leaves behind. Times are seconds since the job started; every rank
// shares one host clock. Not thread-safe.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hang_detector/ingest/process_probe.h"
#include "hang_detector/ingest/rank_file.h"
#include "trace/record.h"
#include "trace/trace_set.h"

namespace ncclscope::testing {

enum class Done { kCompleted, kPending, kUntracked };

inline constexpr int32_t kFloat32 = 7;
inline constexpr int32_t kFloat16 = 6;
inline constexpr int32_t kSum = 0;
inline constexpr int32_t kMax = 2;
inline constexpr char kHost[] = "node-a";

class JobBuilder {
 public:
  explicit JobBuilder(int world_size);

  // A communicator over `ranks` (comm rank = position). A split names its parent and index.
  uint64_t Comm(const std::string& name, const std::vector<int>& ranks, uint64_t parent = 0,
                uint32_t split_index = 0);
  // Next collective of `rank` on `comm` (sequence numbers count per rank and communicator).
  trace::RecordData& Coll(int rank, uint64_t comm, trace::OpType op, double t, Done done,
                          uint64_t count = 256, int32_t dtype = kFloat32, int32_t root = -1);
  trace::RecordData& Send(int rank, uint64_t comm, int peer, double t, Done done);
  trace::RecordData& Recv(int rank, uint64_t comm, int peer, double t, Done done);
  // A call still blocked inside communicator creation.
  void InitInCall(int rank, uint64_t child, int nranks, int comm_rank, double t);
  void SplitInCall(int rank, uint64_t parent, uint32_t split_index, int color, double t);
  // What the probe's profiler-plugin side writes: it watches `comm` from now on; the device work
  // of collective #seq started (seq 0: a start it could not number).
  void ProfilerAttach(int rank, uint64_t comm, double t);
  void DeviceStart(int rank, uint64_t comm, uint64_t seq, double t);
  // A record the probe writes itself (not a call: it consumes no sequence number), of `op`, for
  // the caller to fill in.
  trace::RecordData& ProbeRecord(int rank, uint64_t comm, trace::OpType op, double t);
  // A proxy_progress record (trace/record.h) of collective #seq: one (channel, peer, side) whose
  // oldest unfinished step waits in NCCL profiler state `state`.
  void ProxyProgress(int rank, uint64_t comm, uint64_t seq, int peer, int channel, bool send,
                     int state, double t, trace::OpType op = trace::OpType::kAllReduce);
  // A p2p_device_start record: the device work of send (or receive) #seq to (from) comm rank peer
  // started.
  void P2pDeviceStart(int rank, uint64_t comm, uint64_t seq, int peer, bool send, double t);

  void Heartbeat(int rank, double t);  // default: the time of its last record
  void HeartbeatAll(double t);
  void Finished(int rank);
  // The rank's watchdog aborted `comm` at t (NCCLSCOPE_ON_HANG=abort): the header flag, the
  // comm_abort record flagged by-watchdog, and the completion the device then reports for every
  // operation of `comm` still pending (as NCCL's kernels end when the abort flag is seen).
  void WatchdogAbort(int rank, uint64_t comm, double t);
  void RemoveFile(int rank);
  // A presence file (trace::kHeaderPresence) besides the ranks' ring files: a process started as
  // `rank` of a job of `world_size` ranks (-1: this job's) at job time t, on kHost, that has not
  // called NCCL. Give the rank's own ring file up with RemoveFile for a rank seen only so.
  void AddPresence(int rank, int pid, double t, int world_size = -1);
  void PresenceFinished(int pid);                       // it exited normally
  void PresenceHost(int pid, const std::string& host);  // written on another host than kHost
  void Host(int rank, const std::string& host);         // written on another host than kHost
  void Wrap(int rank, size_t keep_last);  // the ring lost all but its newest `keep_last` records
  void Torn(int rank);

  trace::TraceSet Build() const;
  static int64_t Wall(double t);  // the wall-clock ns of job time t, for AnalyzeOptions::now
  static int Pid(int rank) { return 1000 + rank; }

 private:
  struct CommDef {
    std::string name;
    std::vector<int> ranks;
    uint64_t parent;
    uint32_t split_index;
  };
  trace::RecordData& Append(int rank, trace::RecordData r, double t, Done done);
  int CommRank(uint64_t comm, int rank) const;

  int world_size_;
  std::vector<trace::RingSnapshot> files_;
  std::vector<trace::RingSnapshot> presences_;
  std::vector<bool> removed_;
  std::map<uint64_t, CommDef> comms_;
  std::map<std::pair<int, uint64_t>, uint64_t> coll_seq_;
  std::map<std::tuple<int, uint64_t, int, bool>, uint64_t> p2p_seq_;
};

// Every file of the set compacted as the correlator reads it (RankFileBuilder), for tests that
// build indexes of mixed origin (JobIndex::FromFiles) or cut files for digests.
std::vector<hang_detector::RankFile> CompactFiles(const trace::TraceSet& set);

// Process states by pid, for files written on kHost.
class FakeProbe final : public hang_detector::ProcessProbe {
 public:
  std::string ThisHost() const override { return kHost; }
  hang_detector::ProcessState State(int pid) const override {
    auto it = states.find(pid);
    return it == states.end() ? hang_detector::ProcessState::kRunning : it->second;
  }
  std::map<int, hang_detector::ProcessState> states;
};

}  // namespace ncclscope::testing
