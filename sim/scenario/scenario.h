// The in-memory form of a scenario file (docs/scenarios.md). Plain data: the parser fills it, the
// rank program and the launcher read it. Ranks in faults and per-rank overrides are stored as
// written (negative = counted from the end) and resolved against the job size by comm_layout.h.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ncclscope::sim {

enum class OpKind {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kGather,
  kScatter,
  kPipeline,  // send/recv between consecutive ranks of a communicator
  // PyTorch's all_to_all_single with uneven splits: one group of a send and a receive per peer
  // (torch/csrc/cuda/nccl.cpp, all2all_single_unequal_split); parts sized by alltoallv_split.h.
  kAllToAllV,
  // Several collectives of one communicator inside one ncclGroupStart/End, as PyTorch's
  // coalescing issues them (ProcessGroupNCCL startCoalescing/endCoalescing): OpSpec::ops.
  kCoalesced,
};

// Reduction as written in the scenario; premulsum is turned into a dynamic ncclRedOp_t at issue.
enum class RedOp { kSum, kProd, kMax, kMin, kAvg, kPreMulSum };

// Pipeline partners: the next stage, the previous one, or pairs (0,1), (2,3), ... swapping data
// both ways, as adjacent stages of a 1F1B schedule exchange activations and gradients.
enum class PipeDirection { kForward, kBackward, kExchange };

enum class SplitBy { kBlock, kStride };
enum class SplitKey { kParentRank, kReverse };

struct CommSpec {
  std::string name;
  std::string parent;  // "world" or an earlier communicator
  SplitBy by = SplitBy::kBlock;
  int group = 1;  // block: ranks per group (color = r / group); stride: color = r % group
  SplitKey key = SplitKey::kParentRank;
};

struct OpSpec {
  OpKind kind = OpKind::kAllReduce;
  std::string comm = "world";
  size_t count = 0;  // elements, with NCCL's meaning for the op (per-rank chunk where NCCL says so)
  ncclDataType_t dtype = ncclFloat32;
  RedOp redop = RedOp::kSum;
  double premul_scalar = 2.0;  // only for premulsum; a power of two keeps results exact
  int root = 0;                // rank within the communicator
  PipeDirection direction = PipeDirection::kForward;  // pipeline only
  bool grouped = true;        // pipeline: send and recv inside one ncclGroupStart/End
  bool in_place = false;      // alltoall, gather, scatter: NCCL's in-place form of the call
  bool equal_counts = false;  // alltoallv: every part `count` elements (an equal split)
  // Issued while its stream is being captured into a CUDA graph (begun before the call, ended and
  // the graph dropped after it); what the interposer sees as a captured call.
  bool captured = false;
  // coalesced only: its collectives in call order, each on `comm` (no pipeline, alltoallv or
  // coalesced among them); the coalesced op's own count, dtype etc. are unused.
  std::vector<OpSpec> ops;
};

// Compute time of a step, in milliseconds. per_rank keys are world ranks as written.
struct ComputeSpec {
  double ms = 0.0;
  std::map<int, double> per_rank;
  double jitter_ms = 0.0;  // uniform in [0, jitter_ms), drawn from the seed
};

struct StepSpec {
  std::string name;
  std::optional<ComputeSpec> compute;  // absent: the scenario's default
  std::vector<OpSpec> ops;
};

enum class FaultKind {
  kHang,
  kStuckBefore,
  kSkip,
  kExtraOp,
  kWrongCount,
  kWrongDtype,
  kWrongOp,
  kWrongRedop,
  kWrongRoot,
  kWrongPeer,
  kSendFirst,
  kComputeSlowdown,
  kSlowLink,
  kHungLink,
  kCrash,
  kFreeze,
  kEarlyExit,
  kNeverJoin,
  kIpcOpenFails,
  kDeviceMemoryLimit,
  kNanInput,    // a NaN/Inf written into a collective's input (and, spread, its consequences)
  kFlipOutput,  // one bit of a collective's output inverted inside the emulated NCCL
};

enum class CrashMode { kSigkill, kAbort, kSegfault };

// One fault; which fields matter depends on kind (see docs/scenarios.md). Steps are global
// indices (repetitions counted).
struct FaultSpec {
  FaultKind kind = FaultKind::kHang;
  std::vector<int> ranks;  // world ranks as written
  int step = 0;
  std::optional<int> op;        // op index within the step; required for per-op faults
  int until_step = -1;          // compute_slowdown / slow_link: last affected step, -1 = forever
  double extra_ms = 0.0;        // compute_slowdown
  double factor = 1.0;          // compute_slowdown, slow_link
  std::optional<OpSpec> extra;  // extra_op: the op to add (default: a copy of the addressed op)
  std::optional<size_t> count;  // wrong_count
  std::optional<ncclDataType_t> dtype;  // wrong_dtype
  std::optional<OpKind> as_op;          // wrong_op
  std::optional<RedOp> redop;           // wrong_redop
  std::optional<int> root;              // wrong_root
  int peer_shift = 1;                   // wrong_peer: added to the correct send peer
  CrashMode crash_mode = CrashMode::kSigkill;
  std::string comm;           // never_join
  double join_after_ms = -1;  // never_join: joins this late instead of never (-1: never)
  size_t memory_bytes = 0;    // device_memory_limit
  double nan_value = std::numeric_limits<double>::quiet_NaN();  // nan_input: NaN, Inf or -Inf
  size_t index = 0;    // nan_input: the input element written
  bool spread = true;  // nan_input: ranks whose output holds NaN/Inf poison their later inputs
  uint64_t bit = 0;    // flip_output: bit of the op's output (modulo its size in bits)
  int every = 0;       // flip_output: also every k-th later collective of the rank; 0 = once
};

// The top-level "accel" key: NCCLSCOPE_ACCEL and its settings for every rank of `ncclscope sim`
// (a variable already in the launcher's environment wins). Unset members leave the probe's
// default.
struct AccelSpec {
  bool enabled = true;
  std::optional<uint64_t> buffer_bytes;  // NCCLSCOPE_ACCEL_BUFFER
  std::optional<int64_t> timeout_ms;     // NCCLSCOPE_ACCEL_TIMEOUT_MS
};

struct Scenario {
  std::string file;  // where it was read from, for messages
  std::string name;
  std::string description;
  uint64_t seed = 1;
  int min_ranks = 1;
  int repeat = 1;
  ComputeSpec compute;          // default for steps without their own
  std::vector<CommSpec> comms;  // splits in creation order; "world" is implicit
  std::vector<StepSpec> steps;  // one repetition
  std::vector<FaultSpec> faults;
  std::optional<AccelSpec> accel;  // absent: the launcher's environment alone decides

  int totalSteps() const { return repeat * static_cast<int>(steps.size()); }
  const StepSpec& stepAt(int global_step) const {
    return steps[static_cast<size_t>(global_step) % steps.size()];
  }
};

}  // namespace ncclscope::sim
