// A recording profiler plugin for the emulator's tests. The test executable exports
// ncclProfiler_v5 and ncclProfiler_v4 tables (found through NCCL_PROFILER_PLUGIN=STATIC_PLUGIN or
// any prefix of it); a plugin module built for the loader tests forwards its calls here too. Every
// call is recorded with the calling thread, so a test can state exact sequences.
#pragma once

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace simrec {

struct Event {
  enum Kind { kInit, kStart, kStop, kState, kFinalize } kind = kInit;
  std::string table;      // the table's name: which plugin the emulator loaded
  int ctx = -1;           // rank of the context (-1: null context)
  uint64_t type = 0;      // start: descriptor type; stop/state: the started event's type
  int id = -1;            // start/stop/state: the event's number (order of starts)
  int parent = -1;        // start: parentObj's event number (-1: null or not ours)
  int parent_group = -1;  // Coll/P2p (v5): parentGroup's event number
  std::thread::id tid;
  // Descriptor fields (start) or state arguments (state).
  std::string func, dtype;
  uint64_t seq = 0;
  size_t count = 0;
  int root_or_peer = -1, group_depth = 0, channels = 0, channel = -1;
  int nsteps = 0, chunk = 0, is_send = -1, step = -1, pid = 0, state = 0;
  uint64_t ptimer = 0;
  size_t trans = 0;
  uint64_t comm_hash = 0;
};

// Rank of a context pointer given by the recorder's init; -1 for null or foreign.
int rankOfContext(void* ctx);

// The recorder's knobs; set them before the first communicator is created.
struct Knobs {
  int mask = 0;            // written into NCCL's mask at every init
  int null_ctx_rank = -1;  // this rank's init answers a null context
};
Knobs& knobs();
// NCCL's mask as the last init saw it (the plugin may change it at run time).
int* liveMask();

std::vector<Event> events();
void clear();

// "GroupApi start depth=1", "Coll start AllReduce seq=0", "CollApi stop", "GroupApi state 23":
// one line per event, for exact sequence comparisons.
std::string describe(const Event& e);
const char* typeName(uint64_t type);

// Lines of the events of context `ctx` (by the context of their start) on thread `tid`.
std::vector<std::string> sequence(const std::vector<Event>& ev, int ctx, std::thread::id tid);

// Used by the plugin module: records one call.
void add(Event e);

}  // namespace simrec
