// DecodeFrDumpPickle (the decoder on the reader's flat form, pointing into the input) against the
// value-tree path (ParsePickle, then DecodeFrDump, which flattens the tree again): the same dump
// or the same error for sample dumps of every version, memo layouts of torch and CPython, odd but
// valid dicts, every truncation and every changed byte, and limits at their edge.
#include "trace/flight_recorder/fr_dump.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "tests/trace/flight_recorder/fr_sample_dumps.h"
#include "tests/trace/flight_recorder/memo_layout_pickle.h"
#include "tests/trace/flight_recorder/pickle_bytes.h"
#include "tests/trace/temp_dir.h"
#include "trace/flight_recorder/pickle_writer.h"

namespace ncclscope::flight_recorder {
namespace {

using testing::D;
using testing::MemoLayout;
using testing::ReadFile;
using testing::SampleDump;
using testing::SampleDumpTree;
using testing::WriteMemoLayoutPickle;

std::optional<FrDump> ViaTree(const std::string& bytes, const PickleLimits& limits,
                              std::string* error) {
  auto tree = ParsePickle(bytes.data(), bytes.size(), limits, error);
  if (!tree) return std::nullopt;
  return DecodeFrDump(*tree, error);
}

// Decodes `bytes` both ways, with and without frames, and fails the test where they differ.
void ExpectSameAsTree(const std::string& bytes, const std::string& what,
                      const PickleLimits& limits = PickleLimits{}) {
  std::string tree_error;
  std::optional<FrDump> tree_dump = ViaTree(bytes, limits, &tree_error);
  for (bool keep_frames : {true, false}) {
    std::string error = "stale";
    std::optional<FrDump> direct =
        DecodeFrDumpPickle(bytes.data(), bytes.size(), limits, &error, keep_frames);
    EXPECT_EQ(direct.has_value(), tree_dump.has_value())
        << what << " (keep_frames " << keep_frames << "): direct says '" << error
        << "', the tree path '" << tree_error << "'";
    if (!direct || !tree_dump) {
      EXPECT_EQ(error, tree_error) << what;
      continue;
    }
    EXPECT_TRUE(error.empty()) << what;
    FrDump expected = *tree_dump;
    if (!keep_frames) {
      for (FrEntry& e : expected.entries) e.frames.reset();
    }
    EXPECT_EQ(*direct, expected) << what << " (keep_frames " << keep_frames << ")";
  }
}

// Replaces (or adds) `key` in the dict `d` points to; appends a second copy when `repeat`.
void Set(PickleValue* d, const std::string& key, PickleValue value, bool repeat = false) {
  for (auto& [k, v] : d->AsDict()->items) {
    if (!repeat && std::get<std::string>(k) == key) {
      v = std::move(value);
      return;
    }
  }
  d->AsDict()->items.emplace_back(key, std::move(value));
}
PickleValue* Key(PickleValue* d, const std::string& key) {
  for (auto& [k, v] : d->AsDict()->items) {
    if (const auto* s = std::get_if<std::string>(&k); s != nullptr && *s == key) return &v;
  }
  return nullptr;
}
PickleValue* Entry(PickleValue* tree, size_t i) {
  return &Key(tree, "entries")->AsList()->items[i];
}

class FrPickleDecodeVersionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FrPickleDecodeVersionTest, SampleDumpMatches) {
  const std::string bytes = WritePickle(SampleDumpTree(GetParam()));
  std::string error;
  auto dump = DecodeFrDumpPickle(bytes.data(), bytes.size(), PickleLimits{}, &error, true);
  ASSERT_TRUE(dump.has_value()) << error;
  EXPECT_EQ(*dump, SampleDump(GetParam()));

  auto no_frames = DecodeFrDumpPickle(bytes.data(), bytes.size(), PickleLimits{}, &error, false);
  ASSERT_TRUE(no_frames.has_value()) << error;
  FrDump expected = SampleDump(GetParam());
  ASSERT_TRUE(expected.entries[0].frames.has_value());  // so that dropping them is seen
  for (FrEntry& e : expected.entries) e.frames.reset();
  EXPECT_EQ(*no_frames, expected);
}

TEST_P(FrPickleDecodeVersionTest, MemoLayoutsOfTorchAndCPythonMatch) {
  // Frames repeated across entries, as torch's dumper shares them, and (share_lists) the sizes
  // and dtypes lists shared too.
  PickleValue tree = SampleDumpTree(GetParam());
  const PickleValue frames = *Key(Entry(&tree, 0), "frames");
  Set(Entry(&tree, 1), "frames", frames);
  for (MemoLayout layout : {MemoLayout::kTorch, MemoLayout::kCPython}) {
    for (bool share_lists : {false, true}) {
      const std::string what = "layout " + std::to_string(static_cast<int>(layout)) +
                               " share_lists " + std::to_string(share_lists);
      const std::string bytes = WriteMemoLayoutPickle(tree, layout, share_lists);
      ExpectSameAsTree(bytes, what);
      auto dump = DecodeFrDumpPickle(bytes.data(), bytes.size(), PickleLimits{}, nullptr);
      ASSERT_TRUE(dump.has_value()) << what;
      ASSERT_TRUE(dump->entries[1].frames.has_value()) << what;
      EXPECT_EQ(*dump->entries[1].frames, *dump->entries[0].frames) << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Versions, FrPickleDecodeVersionTest,
                         ::testing::Values("2.2", "2.4", "2.7", "2.10"), [](const auto& info) {
                           std::string name = "v" + info.param;
                           name[2] = '_';
                           return name;
                         });

TEST(FrPickleDecodeTest, OddButValidDictsMatchTheTreePath) {
  // A repeated key counts with its last value (Python's dict), int keys and unknown keys are
  // ignored, JSON typing passes, and a dump without entries decodes.
  PickleValue tree = SampleDumpTree("2.10");
  Set(Entry(&tree, 0), "op_id", 99, /*repeat=*/true);
  Set(Entry(&tree, 1), "state", "started", /*repeat=*/true);
  Set(&tree, "version", "2.11", /*repeat=*/true);
  Entry(&tree, 0)->AsDict()->items.emplace_back(int64_t{7}, "int key");
  Set(Entry(&tree, 1), "stack_id", 7);
  Set(&tree, "nccl_comm_state", D({{"0x1234", D({{"nranks", "4"}})}}));
  Set(Entry(&tree, 0), "process_group", PickleList{{"0", "default_pg"}});
  Set(Entry(&tree, 0), "duration_ms", 2);
  Set(Entry(&tree, 1), "time_discovered_started_ns", 0);
  PickleValue* frame = &Key(Entry(&tree, 0), "frames")->AsList()->items[0];
  Set(frame, "line", 5, /*repeat=*/true);
  const std::string bytes = WritePickle(tree);
  ExpectSameAsTree(bytes, "odd dicts");
  auto dump = DecodeFrDumpPickle(bytes.data(), bytes.size(), PickleLimits{}, nullptr);
  ASSERT_TRUE(dump.has_value());
  EXPECT_EQ(dump->version, "2.11");
  EXPECT_EQ(dump->entries[0].op_id, 99);
  EXPECT_EQ(dump->entries[1].state, FrState::kStarted);
  EXPECT_EQ((*dump->entries[0].frames)[0].line, 5);
  EXPECT_EQ(dump->entries[0].duration_ms, 2.0);

  PickleValue empty = SampleDumpTree("2.10");
  empty.AsDict()->items.pop_back();  // entries, written last
  ASSERT_EQ(Key(&empty, "entries"), nullptr);
  ExpectSameAsTree(WritePickle(empty), "no entries");
}

TEST(FrPickleDecodeTest, BadDumpsGetTheTreePathsError) {
  struct Case {
    const char* what;
    void (*change)(PickleValue*);
    const char* error;
  };
  const Case cases[] = {
      {"op_id str", [](PickleValue* t) { Set(Entry(t, 1), "op_id", "13"); },
       "entries[1].op_id: expected int, got str '13'"},
      {"missing state", [](PickleValue* t) { Entry(t, 0)->AsDict()->items.pop_back(); }, ""},
      {"bad frame line",
       [](PickleValue* t) { Set(&Key(Entry(t, 0), "frames")->AsList()->items[1], "line", "41"); },
       "entries[0].frames[1].line: expected int, got str '41'"},
      {"frame not a dict",
       [](PickleValue* t) { Key(Entry(t, 0), "frames")->AsList()->items[0] = 3; }, ""},
      {"bool for int", [](PickleValue* t) { Set(Entry(t, 0), "pg_id", true); }, ""},
      {"int for bool", [](PickleValue* t) { Set(Entry(t, 0), "retired", 1); }, ""},
      {"entries a tuple",
       [](PickleValue* t) { *Key(t, "entries") = PickleTuple{Key(t, "entries")->AsList()->items}; },
       "entries: expected list, got tuple"},
      {"bad state", [](PickleValue* t) { Set(Entry(t, 1), "state", "done"); }, ""},
      {"bad ranks",
       [](PickleValue* t) {
         Set(Key(t, "pg_config"), "1", D({{"name", "1"}, {"desc", "pp"}, {"ranks", "[0, ]"}}));
       },
       ""},
      {"version 3", [](PickleValue* t) { Set(t, "version", "3.0"); }, ""},
      {"sizes of str",
       [](PickleValue* t) { Set(Entry(t, 0), "input_sizes", PickleList{{PickleList{{"3"}}}}); },
       ""},
      {"process_group of 3",
       [](PickleValue* t) {
         Set(Entry(t, 0), "process_group", PickleTuple{{"0", "a", "b"}});
       },
       ""},
  };
  for (const Case& c : cases) {
    PickleValue tree = SampleDumpTree("2.10");
    c.change(&tree);
    const std::string bytes = WritePickle(tree);
    ExpectSameAsTree(bytes, c.what);
    std::string error;
    EXPECT_FALSE(DecodeFrDumpPickle(bytes.data(), bytes.size(), PickleLimits{}, &error));
    EXPECT_FALSE(error.empty()) << c.what;
    EXPECT_EQ(error.rfind(c.error, 0), 0u) << c.what << ": " << error;
  }
}

TEST(FrPickleDecodeTest, EveryTruncationFailsAsTheTreePathFails) {
  for (MemoLayout layout : {MemoLayout::kTorch, MemoLayout::kCPython}) {
    PickleValue tree = SampleDumpTree("2.10");
    Set(Entry(&tree, 1), "frames", *Key(Entry(&tree, 0), "frames"));
    const std::string bytes = WriteMemoLayoutPickle(tree, layout, true);
    for (size_t n = 0; n < bytes.size(); ++n) {
      const std::string prefix = bytes.substr(0, n);
      std::string error;
      EXPECT_FALSE(DecodeFrDumpPickle(prefix.data(), prefix.size(), PickleLimits{}, &error)) << n;
      EXPECT_EQ(error.rfind("pickle: truncated input: ", 0), 0u) << n << ": " << error;
      ExpectSameAsTree(prefix, "prefix of " + std::to_string(n) + " bytes");
    }
  }
}

TEST(FrPickleDecodeTest, EveryChangedByteAgreesWithTheTreePath) {
  PickleValue tree = SampleDumpTree("2.10");
  Set(Entry(&tree, 1), "frames", *Key(Entry(&tree, 0), "frames"));
  for (MemoLayout layout : {MemoLayout::kTorch, MemoLayout::kCPython}) {
    const std::string bytes = WriteMemoLayoutPickle(tree, layout, true);
    for (size_t i = 2; i < bytes.size(); ++i) {
      for (int value : {0x00, 0x01, 0xff, int{'('}, int{'e'}, int{'u'}, int{'h'}, int{']'}}) {
        std::string changed = bytes;
        changed[i] = static_cast<char>(value);
        ExpectSameAsTree(changed, "byte " + std::to_string(i) + " = " + std::to_string(value));
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

TEST(FrPickleDecodeTest, LimitsAtTheirEdgeAgreeWithTheTreePath) {
  PickleValue tree = SampleDumpTree("2.10");
  Set(Entry(&tree, 1), "frames", *Key(Entry(&tree, 0), "frames"));
  const std::string bytes = WriteMemoLayoutPickle(tree, MemoLayout::kTorch, true);
  // The smallest value of each limit the tree_dump path accepts, then one below it, both ways.
  auto edge = [&](auto set, size_t high) {
    size_t low = 0;
    while (low < high) {  // invariant: high is accepted
      const size_t mid = low + (high - low) / 2;
      PickleLimits limits;
      set(&limits, mid);
      std::string error;
      if (ViaTree(bytes, limits, &error)) {
        high = mid;
      } else {
        low = mid + 1;
      }
    }
    return high;
  };
  using Setter = void (*)(PickleLimits*, size_t);
  const std::pair<const char*, Setter> setters[] = {
      {"max_elements", [](PickleLimits* l, size_t v) { l->max_elements = v; }},
      {"max_string_bytes", [](PickleLimits* l, size_t v) { l->max_string_bytes = v; }},
      {"max_depth", [](PickleLimits* l, size_t v) { l->max_depth = v; }},
      {"max_input_bytes", [](PickleLimits* l, size_t v) { l->max_input_bytes = v; }},
  };
  for (const auto& [name, set] : setters) {
    const size_t least = edge(set, 1 << 20);
    ASSERT_GT(least, 0u) << name;
    for (size_t v : {least, least - 1}) {
      PickleLimits limits;
      set(&limits, v);
      ExpectSameAsTree(bytes, std::string(name) + " = " + std::to_string(v), limits);
    }
  }
}

TEST(FrPickleDecodeTest, MarkWhoseValuesWereTakenIsRefused) {
  // [1] with MARK set above the 1, which APPEND then takes: the APPENDS' MARK lies above the
  // stack. CPython refuses this too (its APPEND cannot reach below a MARK).
  const std::string bytes = testing::Bytes({0x80, 2, ']', 'K', 1, '(', 'a', 'e', '.'});
  std::string error;
  EXPECT_FALSE(DecodeFrDumpPickle(bytes.data(), bytes.size(), PickleLimits{}, &error));
  EXPECT_EQ(error,
            "pickle: APPENDS after values below its MARK were taken (MARK at stack depth 2, stack "
            "now 1) at offset 7");
}

TEST(FrPickleDecodeTest, CPythonPicklesOfADumpMatch) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 is not on PATH; the cross-check needs CPython";
  ncclscope::testing::TempDir dir;
  PickleValue tree = SampleDumpTree("2.10");
  Set(Entry(&tree, 1), "frames", *Key(Entry(&tree, 0), "frames"));
  std::ofstream(dir.path() + "/dump.txt") << DescribePickleValue(tree);
  // The frames list of entry 1 is the same object as entry 0's, so CPython writes a BINGET.
  const std::string script =
      "import pickle, sys\n"
      "d = eval(open(sys.argv[1] + '/dump.txt').read())\n"
      "d['entries'][1]['frames'] = d['entries'][0]['frames']\n"
      "for p in (2, 3, 4):\n"
      "    open('%s/p%d.pkl' % (sys.argv[1], p), 'wb').write(pickle.dumps(d, protocol=p))\n";
  std::ofstream(dir.path() + "/write.py") << script;
  ASSERT_EQ(std::system(("python3 " + dir.path() + "/write.py " + dir.path()).c_str()), 0);
  FrDump expected = SampleDump("2.10");
  expected.entries[1].frames = expected.entries[0].frames;
  for (int protocol : {2, 3, 4}) {
    const std::string bytes = ReadFile(dir.path() + "/p" + std::to_string(protocol) + ".pkl");
    const std::string what = "protocol " + std::to_string(protocol);
    ASSERT_FALSE(bytes.empty()) << what;
    ExpectSameAsTree(bytes, what);
    auto dump = DecodeFrDumpPickle(bytes.data(), bytes.size(), PickleLimits{}, nullptr);
    ASSERT_TRUE(dump.has_value()) << what;
    EXPECT_EQ(*dump, expected) << what;
  }
}

TEST(FrPickleDecodeTest, ManyEntriesInCPythonBatchesAndAWorkingMemoryReusedAcrossDumps) {
  // More than 1000 entries: CPython's APPENDS batches; the same thread then reads a small dump,
  // reusing the working memory of the large one.
  PickleValue tree = SampleDumpTree("2.10");
  PickleList& entries = *Key(&tree, "entries")->AsList();
  const PickleValue first = entries.items[0];
  for (int i = 0; i < 2100; ++i) {
    PickleValue e = first;
    Set(&e, "record_id", 1000 + i);
    entries.items.push_back(std::move(e));
  }
  const std::string big = WriteMemoLayoutPickle(tree, MemoLayout::kCPython, false);
  ExpectSameAsTree(big, "2102 entries");
  const std::string small = WritePickle(SampleDumpTree("2.4"));
  ExpectSameAsTree(small, "small after big");
}

}  // namespace
}  // namespace ncclscope::flight_recorder
