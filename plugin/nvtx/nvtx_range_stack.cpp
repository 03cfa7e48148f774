#include "plugin/nvtx/nvtx_range_stack.h"

#include <cstring>

namespace ncclscope::plugin {

__thread NvtxThreadRanges t_nvtx_ranges;

namespace {

StepPattern g_step_pattern = [] {
  StepPattern p{};
  std::string error;
  ParseStepPattern(kDefaultStepPattern, &p, &error);
  return p;
}();

}  // namespace

void LinkStep(NvtxThreadRanges& t, uint32_t i) noexcept {
  NvtxFrame& f = t.frames[i];
  uint64_t step = 0;
  if (MatchStep(g_step_pattern, f.name, f.len, &step)) {
    f.step_frame = static_cast<int32_t>(i);
    f.step = step;
  } else if (i > 0) {
    f.step_frame = t.frames[i - 1].step_frame;
    f.step = t.frames[i - 1].step;
  } else {
    f.step_frame = kNoFrame;
    f.step = 0;
  }
  f.ctx_cached = 0;
}

const StepPattern& ActiveStepPattern() noexcept {
  return g_step_pattern;
}

void SetActiveStepPattern(const StepPattern& p) noexcept {
  g_step_pattern = p;
}

int NvtxPush(NvtxThreadRanges& t, const char* name, size_t len, uint8_t domain) noexcept {
  const uint32_t level = t.depth++;
  if (level >= kNvtxStackDepth) return static_cast<int>(level);
  NvtxFrame& f = t.frames[level];
  if (len > kNvtxNameChars) len = kNvtxNameChars;
  if (name == nullptr) len = 0;
  if (len != 0) std::memcpy(f.name, name, len);
  f.name[len] = '\0';
  f.len = static_cast<uint8_t>(len);
  f.domain = domain;
  LinkStep(t, level);
  return static_cast<int>(level);
}

int NvtxPushWide(NvtxThreadRanges& t, const wchar_t* name, uint8_t domain) noexcept {
  char narrow[kNvtxNameChars];
  size_t len = 0;
  if (name != nullptr) {
    for (; len < kNvtxNameChars && name[len] != 0; ++len) {
      const wchar_t c = name[len];
      narrow[len] = c > 0 && c < 0x80 ? static_cast<char>(c) : '?';
    }
  }
  return NvtxPush(t, narrow, len, domain);
}

int NvtxPopSlow(NvtxThreadRanges& t, uint8_t domain) noexcept {
  const uint32_t level = t.depth - 1;
  // Another domain's range is on top (domains keep separate stacks in NVTX): remove the innermost
  // frame of this domain and close the gap; the frames above it get their step links again.
  for (uint32_t i = level; i-- > 0;) {
    if (t.frames[i].domain != domain) continue;
    std::memmove(&t.frames[i], &t.frames[i + 1], sizeof(NvtxFrame) * (level - i));
    t.depth = level;
    for (uint32_t j = i; j < level; ++j) LinkStep(t, j);
    return static_cast<int>(i);
  }
  return -1;
}

NvtxWhere LocateFrames(const NvtxThreadRanges& t) noexcept {
  NvtxWhere w;
  if (t.depth == 0) return w;
  const uint32_t top = t.depth < kNvtxStackDepth ? t.depth - 1 : kNvtxStackDepth - 1;
  w.top = static_cast<int32_t>(top);
  w.step = t.frames[top].step_frame;
  if (w.step != kNoFrame && w.step < w.top) w.phase = w.step + 1;
  return w;
}

}  // namespace ncclscope::plugin
