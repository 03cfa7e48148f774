// Fuzz target: what the NVTX side reads from outside. Bytes up to the first newline are offered as
// NCCLSCOPE_NVTX_STEP_PATTERN, the rest as range names pushed on a thread's stack (one per line,
// a line "-" pops) and as name records of a ring file (120-byte RecordData each). The parser
// refuses a pattern with a message or accepts it; matching, pushing, popping and naming never
// crash, never read past a name, and a record's step is the one its word encodes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/nvtx/nvtx_range_stack.h"
#include "plugin/nvtx/nvtx_step_pattern.h"
#include "trace/nvtx_names.h"

namespace pl = ncclscope::plugin;
namespace tr = ncclscope::trace;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t nl = text.find('\n');
  const std::string pattern_text(text.substr(0, nl));
  const std::string_view rest = nl == std::string_view::npos ? "" : text.substr(nl + 1);

  pl::StepPattern pattern{};
  std::string error;
  if (!pl::ParseStepPattern(pattern_text, &pattern, &error)) {
    if (error.empty()) __builtin_trap();
    std::string default_error;
    if (!pl::ParseStepPattern(pl::kDefaultStepPattern, &pattern, &default_error)) __builtin_trap();
  } else if (pattern.count == 0 || pattern.count > pl::kStepAlternatives) {
    __builtin_trap();
  }

  pl::NvtxThreadRanges t{};
  size_t start = 0;
  while (start < rest.size()) {
    size_t end = rest.find('\n', start);
    if (end == std::string_view::npos) end = rest.size();
    const std::string name(rest.substr(start, end - start));  // exact length: ASan sees overreads
    if (name == "-") {
      pl::NvtxPop(t, static_cast<uint8_t>(start & 3));
    } else {
      uint64_t step = 0;
      pl::MatchStep(pattern, name.data(), name.size(), &step);
      pl::NvtxPush(t, name.data(), name.size(), static_cast<uint8_t>(start & 3));
      const pl::NvtxWhere w = pl::LocateFrames(t);
      if (w.top < 0 || w.top >= static_cast<int32_t>(pl::kNvtxStackDepth)) __builtin_trap();
      if (w.phase != pl::kNoFrame && w.phase != w.step + 1) __builtin_trap();
    }
    start = end + 1;
  }

  tr::NvtxNames names;
  for (size_t off = 0; off + sizeof(tr::RecordData) <= rest.size(); off += sizeof(tr::RecordData)) {
    tr::RecordData r{};
    std::memcpy(&r, rest.data() + off, sizeof(r));
    names.Add(r);
    const tr::NvtxWhere w = names.Of(r.reserved);
    if (w.has_step != tr::NvtxHasStep(r.reserved)) __builtin_trap();
    if (w.phase.size() > tr::kNvtxNameBytes || w.range.size() > tr::kNvtxNameBytes + 30) {
      __builtin_trap();
    }
    (void)tr::NvtxWhereText(w);
  }
  return 0;
}

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  seeds->push_back(std::string(pl::kDefaultStepPattern) + "\nstep 12\nbackward\n-\nforward\n");
  seeds->push_back("train[%d];global_step=%d\ntrain[7]\nglobal_step=99999999999999999999\n-\n-");
  seeds->push_back("step1%d\nstep 1\n");
  tr::RecordData r{};
  r.op = static_cast<uint32_t>(tr::OpType::kNvtxPhaseName);
  r.seq = 3;
  std::memcpy(&r.group_id, "backward", 8);
  r.reserved = tr::NvtxReservedWord(tr::NvtxStepField(5), 3);
  seeds->push_back("step %d\n" + std::string(reinterpret_cast<const char*>(&r), sizeof(r)));
}
