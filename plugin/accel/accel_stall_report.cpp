#include "plugin/accel/accel_stall_report.h"

#include <cstdio>
#include <mutex>
#include <vector>

#include "plugin/core/warn.h"

namespace ncclscope::plugin {
namespace {

namespace nc = collectives;

std::mutex g_mutex;  // registration (once per communicator) and the polls: never a call's path
std::vector<std::shared_ptr<AccelComm>>* g_watched = nullptr;  // never freed: polled at exit

void Record(const AccelComm& c, const nc::Stall& stall, uint64_t seq, trace::RingWriter& ring,
            int64_t now) {
  trace::RecordData d{};
  d.op = static_cast<uint32_t>(trace::OpType::kAccelStall);
  d.comm_id = c.comm_id;
  d.seq = seq;
  d.peer = stall.peer;
  d.dtype = static_cast<int32_t>(stall.block);
  d.redop = static_cast<int32_t>(stall.barrier);
  d.count = stall.want;
  d.aux = stall.seen;
  d.t_enter_ns = d.t_exit_ns = now;
  d.t_device_done_ns = trace::kDoneUntracked;
  ring.Append(d, false);
}

}  // namespace

void WatchAccelComm(std::shared_ptr<AccelComm> c) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_watched == nullptr) g_watched = new std::vector<std::shared_ptr<AccelComm>>();
  g_watched->push_back(std::move(c));
}

bool NoticeAccelStall(AccelComm& c, trace::RingWriter& ring, int64_t now_ns) noexcept {
  nc::Stall stall;
  uint64_t seq = 0;
  if (!AccelStalled(c, &stall, &seq)) return false;
  if (c.stall_reported.exchange(true)) return true;
  char where[160];
  nc::DescribeStall(stall, where, sizeof(where));
  // The exchange of grouped sends and receives counts chunks, not collectives: no number to name.
  char what[64];
  if (stall.barrier == nc::Barrier::kChunkReady || stall.barrier == nc::Barrier::kSlotFree) {
    std::snprintf(what, sizeof what, "a group's sends and receives");
  } else {
    std::snprintf(what, sizeof what, "collective #%llu", static_cast<unsigned long long>(seq));
  }
  Warn(
      "NCCLSCOPE_ACCEL: %s on communicator %s ended without its peer: %s; its result is "
      "undefined and the communicator goes to NCCL from its next call",
      what, c.comm_name.c_str(), where);
  Record(c, stall, seq, ring, now_ns);
  return true;
}

void PollAccelStalls(trace::RingWriter& ring, int64_t now_ns) noexcept {
  // try_lock: a poll in progress elsewhere does this one's work, and a forked child whose parent
  // forked mid-poll (the mutex copied locked) must not block at its exit.
  std::unique_lock<std::mutex> lock(g_mutex, std::try_to_lock);
  if (!lock.owns_lock() || g_watched == nullptr) return;
  for (const std::shared_ptr<AccelComm>& c : *g_watched) NoticeAccelStall(*c, ring, now_ns);
}

}  // namespace ncclscope::plugin
