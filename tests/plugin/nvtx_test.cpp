// The NVTX side of the probe without NVTX itself: step patterns, the per-thread range stack, the
// contexts a record carries and the name records a reader needs (through a real ring file), and
// that push, pop and a record's context word allocate nothing once a context is known
// (design.md rule 2; malloc is interposed by this executable and counted on the calling thread).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "plugin/core/config.h"
#include "plugin/nvtx/nvtx_callbacks.h"
#include "plugin/nvtx/nvtx_contexts.h"
#include "plugin/nvtx/nvtx_injection.h"
#include "plugin/nvtx/nvtx_range_stack.h"
#include "plugin/nvtx/nvtx_step_pattern.h"
#include "tests/trace/temp_dir.h"
#include "trace/nvtx_names.h"
#include "trace/ring_reader.h"
#include "trace/ring_writer.h"

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void __libc_free(void*);

namespace {
__thread bool t_counting = false;
__thread long t_allocations = 0;
}  // namespace

extern "C" void* malloc(size_t n) {
  if (t_counting) ++t_allocations;
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t n, size_t m) {
  if (t_counting) ++t_allocations;
  return __libc_calloc(n, m);
}
extern "C" void* realloc(void* p, size_t n) {
  if (t_counting) ++t_allocations;
  return __libc_realloc(p, n);
}
extern "C" void free(void* p) {
  __libc_free(p);
}

namespace ncclscope::plugin {
namespace {

StepPattern Parse(const std::string& text) {
  StepPattern p{};
  std::string error;
  EXPECT_TRUE(ParseStepPattern(text, &p, &error)) << text << ": " << error;
  return p;
}

std::string ParseError(const std::string& text) {
  StepPattern p{};
  std::string error;
  EXPECT_FALSE(ParseStepPattern(text, &p, &error)) << text;
  return error;
}

bool Match(const StepPattern& p, const char* name, uint64_t* step) {
  return MatchStep(p, name, std::strlen(name), step);
}

// The pattern in force before the injection reads its configuration and the one docs/config.md
// documents are one: the injection parses NCCLSCOPE_NVTX_STEP_PATTERN only when it differs.
TEST(NvtxStepPattern, DefaultIsTheConfigurationTablesDefault) {
  std::vector<std::string> warnings;
  const Config config = ParseConfig([](const char*) -> const char* { return nullptr; }, &warnings);
  EXPECT_EQ(config.nvtx_step_pattern, kDefaultStepPattern);
  EXPECT_TRUE(warnings.empty());
}

TEST(NvtxStepPattern, DefaultMatchesTheUsualSpellings) {
  const StepPattern p = Parse(kDefaultStepPattern);
  uint64_t step = 0;
  EXPECT_TRUE(Match(p, "step 123", &step));
  EXPECT_EQ(step, 123u);
  EXPECT_TRUE(Match(p, "Step 7 of 100", &step));  // anything may follow the number
  EXPECT_EQ(step, 7u);
  EXPECT_TRUE(Match(p, "iteration 0", &step));
  EXPECT_EQ(step, 0u);
  EXPECT_FALSE(Match(p, "stepper 5", &step));
  EXPECT_FALSE(Match(p, "step ", &step));
  EXPECT_FALSE(Match(p, "forward", &step));
  EXPECT_FALSE(Match(p, "my step 5", &step));                  // the name starts with the prefix
  EXPECT_FALSE(Match(p, "step 99999999999999999999", &step));  // past 2^63: no step at all
}

TEST(NvtxStepPattern, CustomPatternWithSuffix) {
  const StepPattern p = Parse("train[%d];global_step=%d");
  uint64_t step = 0;
  EXPECT_TRUE(Match(p, "train[42]", &step));
  EXPECT_EQ(step, 42u);
  EXPECT_FALSE(Match(p, "train[42", &step));  // the text after %d must follow the digits
  EXPECT_TRUE(Match(p, "global_step=9", &step));
  EXPECT_EQ(step, 9u);
  EXPECT_FALSE(Match(p, "step 1", &step));  // the default is replaced, not extended
}

TEST(NvtxStepPattern, BadPatternsSayWhatIsWrong) {
  EXPECT_NE(ParseError("").find("empty"), std::string::npos);
  EXPECT_NE(ParseError("step").find("alternative 1 'step' has no %d"), std::string::npos);
  EXPECT_NE(ParseError("step %d;iter %d %d").find("alternative 2"), std::string::npos);
  EXPECT_NE(ParseError("step1%d").find("digit right next to %d"), std::string::npos);
  EXPECT_NE(ParseError(std::string(40, 'x') + "%d").find("31 characters"), std::string::npos);
  EXPECT_NE(ParseError("a%d;b%d;c%d;d%d;e%d;f%d;g%d;h%d;i%d").find("more than 8"),
            std::string::npos);
  EXPECT_NE(ParseError("step %d;").find("alternative 2 '' has no %d"), std::string::npos);
}

// Pushes a name of the default domain.
int Push(NvtxThreadRanges& t, const char* name, uint8_t domain = 0) {
  return NvtxPush(t, name, std::strlen(name), domain);
}

TEST(NvtxRangeStack, StepPhaseAndInnermost) {
  NvtxThreadRanges t{};
  EXPECT_EQ(Push(t, "epoch 1"), 0);
  EXPECT_EQ(Push(t, "step 12"), 1);
  EXPECT_EQ(Push(t, "backward"), 2);
  EXPECT_EQ(Push(t, "layer 3"), 3);
  NvtxWhere w = LocateFrames(t);
  EXPECT_EQ(w.top, 3);
  EXPECT_EQ(w.step, 1);
  EXPECT_EQ(w.phase, 2);
  EXPECT_EQ(t.frames[w.step].step, 12u);
  EXPECT_EQ(NvtxPop(t, 0), 3);
  EXPECT_EQ(NvtxPop(t, 0), 2);
  w = LocateFrames(t);
  EXPECT_EQ(w.top, 1);
  EXPECT_EQ(w.phase, kNoFrame);  // inside the step range itself: no phase
  EXPECT_EQ(NvtxPop(t, 0), 1);
  EXPECT_EQ(LocateFrames(t).step, kNoFrame);  // "epoch 1" is no step
  EXPECT_EQ(NvtxPop(t, 0), 0);
  EXPECT_EQ(NvtxPop(t, 0), -1);  // an unbalanced pop is refused, never underflows
  EXPECT_EQ(t.depth, 0u);
}

TEST(NvtxRangeStack, LongNamesAreCutAndDeepStacksCountOn) {
  NvtxThreadRanges t{};
  const std::string long_name(200, 'n');
  Push(t, "step 1");
  Push(t, long_name.c_str());
  EXPECT_EQ(t.frames[1].len, kNvtxNameChars);
  EXPECT_EQ(std::string(t.frames[1].name), long_name.substr(0, kNvtxNameChars));
  for (uint32_t i = 2; i < kNvtxStackDepth + 10; ++i) EXPECT_EQ(Push(t, "deep"), int(i));
  const NvtxWhere w = LocateFrames(t);
  EXPECT_EQ(w.top, int(kNvtxStackDepth) - 1);  // the deepest stored frame stands in
  EXPECT_EQ(w.step, 0);
  for (uint32_t i = kNvtxStackDepth + 10; i-- > 2;) EXPECT_EQ(NvtxPop(t, 0), int(i));
  EXPECT_EQ(LocateFrames(t).top, 1);
}

TEST(NvtxRangeStack, DomainsPopTheirOwnRange) {
  NvtxThreadRanges t{};
  Push(t, "step 4", 0);
  Push(t, "optimizer", 2);  // a range of another domain
  Push(t, "clip", 0);
  // NVTX keeps a stack per domain: popping domain 2 ends "optimizer", under "clip".
  EXPECT_EQ(NvtxPop(t, 2), 1);
  EXPECT_EQ(t.depth, 2u);
  EXPECT_STREQ(t.frames[1].name, "clip");
  EXPECT_EQ(t.frames[1].step_frame, 0);  // links are rebuilt after the gap closes
  EXPECT_EQ(NvtxPop(t, 2), -1);          // none of domain 2 is left
  EXPECT_EQ(t.depth, 2u);
}

TEST(NvtxRangeStack, WideNamesAreNarrowed) {
  NvtxThreadRanges t{};
  NvtxPushWide(t, L"step 8", 0);
  NvtxPushWide(t, L"f\u00e9rward", 0);
  EXPECT_STREQ(t.frames[1].name, "f?rward");
  EXPECT_EQ(t.frames[1].step, 8u);
}

class NvtxContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    trace::RingOptions o;
    o.dir = dir_.path();
    o.record_capacity = 64;
    std::string error;
    ring_ = trace::RingWriter::Create(o, &error);
    ASSERT_NE(ring_, nullptr) << error;
  }
  trace::RingSnapshot Read() const {
    std::string error;
    auto s = trace::ReadRingFile(ring_->path(), &error);
    EXPECT_TRUE(s) << error;
    return s ? *s : trace::RingSnapshot{};
  }
  testing::TempDir dir_;
  std::unique_ptr<trace::RingWriter> ring_;
};

TEST_F(NvtxContextTest, RecordsNameTheirStepAndPhase) {
  NvtxThreadRanges t{};
  Push(t, "step 12");
  Push(t, "backward");
  Push(t, "layer 3");
  const uint32_t word = NvtxContextWordSlow(*ring_, t);
  EXPECT_TRUE(trace::NvtxHasStep(word));
  EXPECT_EQ(trace::NvtxStep(word), 12u);
  EXPECT_NE(trace::NvtxContextId(word), 0u);
  EXPECT_EQ(NvtxContextWordSlow(*ring_, t), word);  // same place, same word, no new names
  NvtxPop(t, 0);
  const uint32_t in_phase = NvtxContextWordSlow(*ring_, t);
  EXPECT_NE(trace::NvtxContextId(in_phase), trace::NvtxContextId(word));

  const trace::RingSnapshot snap = Read();
  ASSERT_EQ(snap.records.size(), 4u);  // two names per context, each written once
  trace::NvtxNames names;
  for (const auto& r : snap.records) names.Add(r.data);
  const trace::NvtxWhere w = names.Of(word);
  EXPECT_EQ(w.step, 12u);
  EXPECT_EQ(w.phase, "backward");
  EXPECT_EQ(w.range, "layer 3");
  EXPECT_EQ(trace::NvtxWhereText(w), "step 12, backward (innermost: layer 3)");
  EXPECT_EQ(trace::NvtxWhereText(names.Of(in_phase)), "step 12, backward");
}

TEST_F(NvtxContextTest, NoStepKeepsTheInnermostRange) {
  NvtxThreadRanges t{};
  Push(t, "warmup");
  const uint32_t word = NvtxContextWordSlow(*ring_, t);
  EXPECT_FALSE(trace::NvtxHasStep(word));
  trace::NvtxNames names;
  for (const auto& r : Read().records) names.Add(r.data);
  EXPECT_EQ(trace::NvtxWhereText(names.Of(word)), "warmup");
  t = NvtxThreadRanges{};
  Push(t, "step 3");
  const uint32_t only_step = NvtxContextWordSlow(*ring_, t);
  EXPECT_EQ(trace::NvtxContextId(only_step), 0u);  // the step range is no context of its own
  EXPECT_EQ(trace::NvtxWhereText(names.Of(only_step)), "step 3");
}

TEST_F(NvtxContextTest, NamesAreWrittenAgainAfterHalfARing) {
  NvtxThreadRanges t{};
  Push(t, "step 1");
  Push(t, "forward");
  const uint32_t word = NvtxContextWordSlow(*ring_, t);
  trace::RecordData filler{};
  for (int i = 0; i < 40; ++i) ring_->Append(filler, false);  // more than half of 64 slots
  t.frames[1].ctx_cached = 1;  // as after the first record: the id is cached on the frame
  EXPECT_EQ(NvtxContextWordSlow(*ring_, t), word);
  int name_records = 0;
  for (const auto& r : Read().records) name_records += trace::NvtxNames::IsNameRecord(r.data);
  EXPECT_EQ(name_records, 4);
}

TEST_F(NvtxContextTest, HugeStepsSaturate) {
  NvtxThreadRanges t{};
  Push(t, "step 99999999999");
  const uint32_t word = NvtxContextWordSlow(*ring_, t);
  EXPECT_EQ(trace::NvtxStep(word), trace::kNvtxStepMax);
}

TEST_F(NvtxContextTest, PushPopAndAKnownContextAllocateNothing) {
  NvtxThreadRanges t{};
  Push(t, "step 1");
  Push(t, "forward");
  NvtxContextWordSlow(*ring_, t);  // interns the context (its first use may write names)
  NvtxPop(t, 0);
  t_allocations = 0;
  t_counting = true;
  for (int i = 0; i < 1000; ++i) {
    Push(t, "forward");
    NvtxPushWide(t, L"inner", 0);
    NvtxPop(t, 0);
    t.frames[1].ctx_cached = 1;
    NvtxContextWordSlow(*ring_, t);
    NvtxPop(t, 0);
  }
  t_counting = false;
  EXPECT_EQ(t_allocations, 0);
}

int g_marks = 0;
std::string g_mark_domain;
std::string g_mark_text;
nvtxDomainHandle_t FakeCreate(const char* name) {
  g_mark_domain = name;
  return reinterpret_cast<nvtxDomainHandle_t>(0x40);
}
void FakeMark(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  ++g_marks;
  if (d == reinterpret_cast<nvtxDomainHandle_t>(0x40)) g_mark_text = a->message.ascii;
}

// The watchdog's verdict lines (plugin/watchdog/watchdog_stderr.h) reach a forwarded tool as marks
// of an "ncclscope" domain, so Nsight Systems shows them; with no tool they go nowhere.
TEST(NvtxMarks, VerdictsAreMarksOfTheForwardedTool) {
  NvtxMarkVerdict("no tool: nothing happens");
  EXPECT_EQ(g_marks, 0);
  g_nvtx_next.create_a = &FakeCreate;
  g_nvtx_next.domain_mark = &FakeMark;
  NvtxMarkVerdict("SUSPECT (tp allreduce #11)");
  NvtxMarkVerdict("HANG (tp allreduce #11)");
  g_nvtx_next.create_a = nullptr;
  g_nvtx_next.domain_mark = nullptr;
  EXPECT_EQ(g_marks, 2);
  EXPECT_EQ(g_mark_domain, "ncclscope");
  EXPECT_EQ(g_mark_text, "HANG (tp allreduce #11)");
}

}  // namespace
}  // namespace ncclscope::plugin
