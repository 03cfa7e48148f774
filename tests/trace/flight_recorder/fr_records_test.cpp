// FR dump -> ring records (trace/flight_recorder/fr_records.h): what each documented corner of the
// dump format (torch's c10d FlightRecorderDetail.hpp) becomes, as the correlator will read it.
#include "trace/flight_recorder/fr_records.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ncclscope::flight_recorder {
namespace {

using trace::OpType;

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kMs = 1'000'000;

FrDump TwoRankDump() {
  FrDump d;
  d.version = "2.10";
  d.comm_lib_version = "2.21.5";
  d.pg_config = {{"0", "0", "default_pg", {0, 1}}, {"1", "1", "tp", {2, 3}}};
  return d;
}

FrEntry Entry(int64_t record_id, const std::string& name, int64_t coll_seq, int64_t p2p_seq,
              FrState state, int64_t created_ms) {
  FrEntry e;
  e.record_id = record_id;
  e.pg_name = "0";
  e.pg_desc = "default_pg";
  e.collective_seq_id = coll_seq;
  e.p2p_seq_id = p2p_seq;
  e.profiling_name = name;
  e.time_created_ns = kT0 + created_ms * kMs;
  e.input_sizes = {{4, 8}};
  e.output_sizes = {{4, 8}};
  e.input_dtypes = {"Float"};
  e.output_dtypes = {"Float"};
  e.state = state;
  if (state == FrState::kCompleted) e.time_discovered_completed_ns = e.time_created_ns + 5 * kMs;
  e.is_p2p = name.find("send") != std::string::npos || name.find("recv") != std::string::npos;
  return e;
}

// The records of one kind, in order.
std::vector<trace::RecordData> Of(const FrRecords& r, OpType op) {
  std::vector<trace::RecordData> out;
  for (const trace::StoredRecord& s : r.records) {
    if (s.data.op == static_cast<uint32_t>(op)) out.push_back(s.data);
  }
  return out;
}

FrRecords Convert(const FrDump& d, int rank = 0) {
  return RecordsFromFrDump(
      d, {"dumps/nccl_trace_rank_" + std::to_string(rank), rank, kT0 + 1000 * kMs});
}

TEST(FrRecordsTest, ProcessGroupsOfTheRankBecomeItsCommunicators) {
  const FrRecords r = Convert(TwoRankDump(), 1);
  EXPECT_EQ(r.info.global_rank, 1);
  EXPECT_EQ(r.info.world_size, 2);
  EXPECT_EQ(r.info.nccl_version, 22105u);
  EXPECT_EQ(r.info.heartbeat_monotonic_ns, kT0 + 1000 * kMs);
  // Only the group this rank belongs to; its rank there is its index in the group's ranks.
  ASSERT_EQ(r.info.comms.size(), 1u);
  EXPECT_EQ(r.info.comms[0].id, FrCommId("0", {0, 1}));
  EXPECT_EQ(r.info.comms[0].rank, 1);
  EXPECT_EQ(r.info.comms[0].nranks, 2);
  EXPECT_EQ(r.info.comms[0].name, "default_pg");
  // Same name, other ranks (split_group may reuse a name): another communicator.
  EXPECT_NE(FrCommId("0", {0, 1}), FrCommId("0", {0, 2}));
}

TEST(FrRecordsTest, CollectivesKeepTheirSequenceSizeDtypeAndState) {
  FrDump d = TwoRankDump();
  d.entries = {Entry(0, "nccl:all_reduce", 1, 0, FrState::kCompleted, 0),
               Entry(1, "nccl:_all_gather_base", 2, 0, FrState::kCompleted, 10),
               Entry(2, "nccl:all_reduce", 3, 0, FrState::kScheduled, 20)};
  d.entries[1].output_sizes = {{64, 8}};
  const FrRecords r = Convert(d);
  const auto ar = Of(r, OpType::kAllReduce);
  ASSERT_EQ(ar.size(), 2u);
  EXPECT_EQ(ar[0].seq, 1u);
  EXPECT_EQ(ar[0].count, 32u);
  EXPECT_EQ(ar[0].dtype, 7);   // ncclFloat32
  EXPECT_EQ(ar[0].redop, -1);  // FR does not record it: unknown, never a disagreement
  EXPECT_EQ(ar[0].t_enter_ns, kT0);
  EXPECT_EQ(ar[0].t_device_done_ns, kT0 + 5 * kMs);
  EXPECT_EQ(ar[1].seq, 3u);
  EXPECT_TRUE(trace::IsPending(ar[1].t_device_done_ns));
  const auto ag = Of(r, OpType::kAllGather);
  ASSERT_EQ(ag.size(), 1u);
  EXPECT_EQ(ag[0].count, 32u);  // the send count, as NCCL got it
  EXPECT_EQ(ag[0].seq, 2u);
  // No timing in the dump: nothing about device starts is claimed.
  EXPECT_TRUE(Of(r, OpType::kProfilerAttach).empty());
  EXPECT_TRUE(Of(r, OpType::kDeviceStart).empty());
  EXPECT_TRUE(r.notes.empty());
}

TEST(FrRecordsTest, AlltoallCountIsUnknownBecauseSplitsMayDifferPerRank) {
  FrDump d = TwoRankDump();
  d.entries = {Entry(0, "nccl:all_to_all", 1, 0, FrState::kCompleted, 0)};
  d.entries[0].input_sizes = {{7}};
  const auto a2a = Of(Convert(d), OpType::kAlltoAll);
  ASSERT_EQ(a2a.size(), 1u);
  EXPECT_EQ(a2a[0].count, 0u);
}

TEST(FrRecordsTest, CoalescedCollectivesAreOneOperationInEveryVersion) {
  // 2.7 on: each op of the group, then the closing entry, all with the group's seq
  // (pytorch/pytorch#151238); before 2.7 the closing entry alone. Both must read the same, or ranks
  // dumped by different torch versions would disagree.
  FrDump v27 = TwoRankDump();
  v27.entries = {Entry(0, "nccl:all_gather_into_tensor_coalesced", 4, 0, FrState::kScheduled, 0),
                 Entry(1, "nccl:all_gather_into_tensor_coalesced", 4, 0, FrState::kScheduled, 0),
                 Entry(2, "nccl:ALLGATHER_coalesced", 4, 0, FrState::kCompleted, 1)};
  v27.entries[2].input_sizes = {};
  v27.entries[2].output_sizes = {};
  v27.entries[2].input_dtypes = {};
  v27.entries[2].output_dtypes = {};
  FrDump v24 = v27;
  v24.version = "2.4";
  v24.entries.erase(v24.entries.begin(), v24.entries.begin() + 2);
  for (const FrDump* d : {&v27, &v24}) {
    const auto ag = Of(Convert(*d), OpType::kAllGather);
    ASSERT_EQ(ag.size(), 1u) << d->version;
    EXPECT_EQ(ag[0].seq, 4u);
    EXPECT_EQ(ag[0].count, 0u);
    EXPECT_EQ(ag[0].dtype, -1);
    EXPECT_NE(ag[0].group_id, 0u);
    EXPECT_GT(ag[0].t_device_done_ns, 0);  // the group's state is its closing entry's
  }
}

TEST(FrRecordsTest, SendsAndReceivesAreNumberedPerPeerAndDirection) {
  FrDump d = TwoRankDump();
  d.pg_config[0].ranks = {0, 1, 2};
  d.entries = {Entry(0, "nccl:send 0->1", 0, 1, FrState::kCompleted, 0),
               Entry(1, "nccl:recv 0<-2", 0, 2, FrState::kCompleted, 1),
               Entry(2, "nccl:send 0->1", 0, 3, FrState::kCompleted, 2),
               Entry(3, "nccl:send 0->2", 0, 4, FrState::kScheduled, 3)};
  const FrRecords r = Convert(d);
  const auto sends = Of(r, OpType::kSend);
  ASSERT_EQ(sends.size(), 3u);
  EXPECT_EQ(sends[0].peer, 1);
  EXPECT_EQ(sends[0].seq, 1u);
  EXPECT_EQ(sends[1].peer, 1);
  EXPECT_EQ(sends[1].seq, 2u);
  EXPECT_EQ(sends[2].peer, 2);
  EXPECT_EQ(sends[2].seq, 1u);
  EXPECT_TRUE(trace::IsPending(sends[2].t_device_done_ns));
  const auto recvs = Of(r, OpType::kRecv);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(recvs[0].peer, 2);
  EXPECT_EQ(recvs[0].seq, 1u);
}

TEST(FrRecordsTest, PointToPointRetiredOutOfTheBufferIsNotMatchedAndSaysSo) {
  FrDump d = TwoRankDump();
  d.entries = {Entry(500, "nccl:send 0->1", 0, 40, FrState::kCompleted, 0),
               Entry(501, "nccl:all_reduce", 9, 40, FrState::kCompleted, 1)};
  const FrRecords r = Convert(d);
  const auto sends = Of(r, OpType::kSend);
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_EQ(sends[0].seq, 0u);  // which send to rank 1 it was is unknown
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("cannot be matched"), std::string::npos) << r.notes[0];
  // Entries before record 500 were retired: the file reads as wrapped from there.
  EXPECT_EQ(r.info.overwritten, 500u);
  EXPECT_EQ(r.records.front().index, 500u);
  EXPECT_EQ(Of(r, OpType::kAllReduce).at(0).seq, 9u);
}

TEST(FrRecordsTest, CoalescedSendsAndReceivesTakeTheStateOfTheirClosingEntry) {
  // batch_isend_irecv: the ops are recorded with null events and stay "scheduled" (#137969);
  // the closing entry carries the group's real state.
  FrDump d = TwoRankDump();
  d.entries = {Entry(0, "nccl:send 0->1", 1, 1, FrState::kScheduled, 0),
               Entry(1, "nccl:recv 0<-1", 1, 1, FrState::kScheduled, 0),
               Entry(2, "nccl:coalesced", 1, 1, FrState::kCompleted, 1)};
  d.entries[2].is_p2p = true;
  const FrRecords r = Convert(d);
  const auto sends = Of(r, OpType::kSend);
  const auto recvs = Of(r, OpType::kRecv);
  ASSERT_EQ(sends.size(), 1u);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(sends[0].t_device_done_ns, d.entries[2].time_discovered_completed_ns.value());
  EXPECT_EQ(recvs[0].t_device_done_ns, d.entries[2].time_discovered_completed_ns.value());
  EXPECT_EQ(sends[0].group_id, recvs[0].group_id);
  EXPECT_NE(sends[0].flags & trace::kFlagInGroup, 0u);
  // The closing entry of a p2p group is no collective.
  EXPECT_EQ(r.records.size(), 2u);
}

TEST(FrRecordsTest, WithTimingStartsAreKnownAndTheirAbsenceMeansSomething) {
  FrDump d = TwoRankDump();
  d.entries = {Entry(0, "nccl:all_reduce", 1, 0, FrState::kCompleted, 0),
               Entry(1, "nccl:all_reduce", 2, 0, FrState::kStarted, 10),
               Entry(2, "nccl:all_reduce", 3, 0, FrState::kScheduled, 20)};
  d.entries[0].time_discovered_started_ns = kT0 + 1 * kMs;
  d.entries[0].duration_ms = 3.0;
  d.entries[1].time_discovered_started_ns = kT0 + 11 * kMs;
  const FrRecords r = Convert(d);
  // Attached before anything, so "its kernel never started" can be said of #3.
  EXPECT_EQ(r.records.front().data.op, static_cast<uint32_t>(OpType::kProfilerAttach));
  const auto starts = Of(r, OpType::kDeviceStart);
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0].seq, 1u);
  EXPECT_EQ(starts[1].seq, 2u);
  EXPECT_EQ(starts[1].t_enter_ns, kT0 + 11 * kMs);
  // Indices grow strictly: the made-up records push the later ones on.
  for (size_t i = 1; i < r.records.size(); ++i) {
    EXPECT_GT(r.records[i].index, r.records[i - 1].index);
  }
}

TEST(FrRecordsTest, EveryRecordNamesTheEntryItStandsFor) {
  // With timing the reader makes up records (an attach per group, a start and a device time per
  // op), so record indices run ahead of FR's record_id; entry_of says which entry each is.
  FrDump d = TwoRankDump();
  d.entries = {Entry(7, "nccl:all_reduce", 1, 0, FrState::kCompleted, 0),
               Entry(8, "nccl:all_reduce", 2, 0, FrState::kStarted, 10),
               Entry(9, "nccl:all_reduce", 3, 0, FrState::kScheduled, 20)};
  d.entries[0].time_discovered_started_ns = kT0 + 1 * kMs;
  d.entries[0].duration_ms = 3.0;
  d.entries[1].time_discovered_started_ns = kT0 + 11 * kMs;
  const FrRecords r = Convert(d);
  ASSERT_EQ(r.entry_of.size(), r.records.size());
  std::vector<int64_t> ops;
  for (size_t i = 0; i < r.records.size(); ++i) {
    const auto op = static_cast<OpType>(r.records[i].data.op);
    if (op == OpType::kProfilerAttach) {
      EXPECT_EQ(r.entry_of[i], -1);
      continue;
    }
    ASSERT_GE(r.entry_of[i], 0);
    const FrEntry& e = d.entries[static_cast<size_t>(r.entry_of[i])];
    EXPECT_EQ(static_cast<uint64_t>(e.collective_seq_id), r.records[i].data.seq);
    if (op == OpType::kAllReduce) ops.push_back(e.record_id);
  }
  EXPECT_EQ(ops, (std::vector<int64_t>{7, 8, 9}));
  // The shift the names make up for: #3's record is past FR's record_id 9.
  EXPECT_GT(r.records.back().index, 9u);
}

TEST(FrRecordsTest, TimedOpsCarryTorchsDeviceTimeRightAfterTheirRecord) {
  // duration_ms: the time between the CUDA events torch records around the op on its stream
  // (FlightRecorderDetail.hpp, retire_id: getDurationFromEvent of its start and end events).
  FrDump d = TwoRankDump();
  d.entries = {Entry(0, "nccl:all_reduce", 1, 0, FrState::kCompleted, 0),
               Entry(1, "nccl:send 0->1", 0, 1, FrState::kCompleted, 1),
               Entry(2, "nccl:send 0->1", 0, 2, FrState::kScheduled, 2),
               Entry(3, "nccl:recv 0<-1", 0, 3, FrState::kScheduled, 3),
               Entry(4, "nccl:coalesced", 0, 3, FrState::kCompleted, 3)};
  d.entries[0].duration_ms = 2.5;
  d.entries[1].duration_ms = 0.25;
  d.entries[2].duration_ms = 9.0;  // not completed: not a time (torch sets none then)
  d.entries[4].duration_ms = 7.0;  // a group's: not one receive's
  d.entries[4].is_p2p = true;
  const FrRecords r = Convert(d);
  std::vector<std::pair<uint64_t, uint64_t>> times;  // (op index, ns)
  for (size_t i = 0; i < r.records.size(); ++i) {
    const trace::RecordData& e = r.records[i].data;
    if (e.op != static_cast<uint32_t>(OpType::kEventDuration)) continue;
    ASSERT_GT(i, 0u);
    const trace::StoredRecord& op = r.records[i - 1];
    EXPECT_EQ(e.aux, op.index);
    EXPECT_EQ(e.comm_id, op.data.comm_id);
    EXPECT_EQ(e.seq, op.data.seq);
    EXPECT_EQ(e.redop, static_cast<int32_t>(op.data.op));
    EXPECT_EQ(e.t_device_done_ns, trace::kDoneUntracked);
    EXPECT_EQ(r.entry_of[i], r.entry_of[i - 1]);
    times.emplace_back(e.aux, e.count);
  }
  ASSERT_EQ(times.size(), 2u);
  EXPECT_EQ(times[0].second, 2'500'000u);
  EXPECT_EQ(times[1].second, 250'000u);
}

TEST(FrRecordsTest, EntriesOfAGroupThisRankIsNotInAreLeftOutWithANote) {
  FrDump d = TwoRankDump();
  d.entries = {Entry(0, "nccl:all_reduce", 1, 0, FrState::kCompleted, 0)};
  d.entries[0].pg_name = "1";  // tp: ranks 2 and 3
  const FrRecords r = Convert(d);
  EXPECT_TRUE(r.records.empty());
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("'1'"), std::string::npos) << r.notes[0];
}

TEST(FrRecordsTest, CompletionWithoutDiscoveredTimeFallsBackToDuration) {
  FrDump d = TwoRankDump();
  d.entries = {Entry(0, "nccl:broadcast", 1, 0, FrState::kCompleted, 0)};
  d.entries[0].time_discovered_completed_ns.reset();
  d.entries[0].duration_ms = 2.5;
  const auto b = Of(Convert(d), OpType::kBroadcast);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].t_device_done_ns, kT0 + 2'500'000);
}

}  // namespace
}  // namespace ncclscope::flight_recorder
