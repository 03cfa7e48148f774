// The FR dump model: versions 2.2 to 2.10 decoded and encoded, JSON typing, and errors that name
// the entry and the key.
#include <gtest/gtest.h>

#include <span>
#include <string_view>
#include <vector>

#include "tests/trace/flight_recorder/fr_sample_dumps.h"
#include "tests/trace/flight_recorder/pickle_bytes.h"
#include "trace/flight_recorder/fr_dump.h"
#include "trace/flight_recorder/pickle_reader.h"
#include "trace/flight_recorder/pickle_writer.h"

namespace ncclscope::flight_recorder {
namespace {

using testing::D;
using testing::SampleDump;
using testing::SampleDumpTree;

class FrDumpVersionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FrDumpVersionTest, DecodesTheDumpTorchWrites) {
  std::string error;
  auto dump = DecodeFrDump(SampleDumpTree(GetParam()), &error);
  ASSERT_TRUE(dump.has_value()) << error;
  EXPECT_EQ(*dump, SampleDump(GetParam()));
}

TEST_P(FrDumpVersionTest, EncodesTheKeysOfItsVersionInTorchsOrder) {
  const PickleValue encoded = EncodeFrDump(SampleDump(GetParam()));
  EXPECT_EQ(encoded, SampleDumpTree(GetParam())) << DescribePickleValue(encoded) << "\n"
                                                 << DescribePickleValue(SampleDumpTree(GetParam()));
}

TEST_P(FrDumpVersionTest, SurvivesPickleBytes) {
  const std::string bytes = WritePickle(EncodeFrDump(SampleDump(GetParam())));
  std::string error;
  auto tree = testing::Parse(bytes, &error);
  ASSERT_TRUE(tree.has_value()) << error;
  auto dump = DecodeFrDump(*tree, &error);
  ASSERT_TRUE(dump.has_value()) << error;
  EXPECT_EQ(*dump, SampleDump(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Versions, FrDumpVersionTest,
                         ::testing::Values("2.2", "2.4", "2.7", "2.10"), [](const auto& info) {
                           std::string name = "v" + info.param;
                           name[2] = '_';
                           return name;
                         });

// Replaces (or adds) `key` in the dict `d` points to.
void SetField(PickleValue* d, const std::string& key, PickleValue value) {
  for (auto& [k, v] : d->AsDict()->items) {
    if (std::get<std::string>(k) == key) {
      v = std::move(value);
      return;
    }
  }
  d->AsDict()->items.emplace_back(key, std::move(value));
}
void Erase(PickleValue* d, const std::string& key) {
  auto& items = d->AsDict()->items;
  std::erase_if(items, [&](const auto& kv) { return std::get<std::string>(kv.first) == key; });
}
PickleValue* EntryAt(PickleValue* dump, size_t i) {
  for (auto& [k, v] : dump->AsDict()->items) {
    if (std::get<std::string>(k) == "entries") return &v.AsList()->items[i];
  }
  return nullptr;
}
PickleValue* Field(PickleValue* d, const std::string& key) {
  for (auto& [k, v] : d->AsDict()->items) {
    if (std::get<std::string>(k) == key) return &v;
  }
  return nullptr;
}

std::string DecodeError(const PickleValue& tree) {
  std::string error;
  auto dump = DecodeFrDump(tree, &error);
  EXPECT_FALSE(dump.has_value());
  return error;
}

TEST(FrDumpTest, AcceptsTheJsonTypingOfEveryField) {
  // _dump_nccl_trace_json: process_group a list, pg_status values strings, absent discovery times
  // 0; and a rank list as a list, a whole duration as an int.
  PickleValue tree = SampleDumpTree("2.10");
  SetField(EntryAt(&tree, 0), "process_group", PickleList{{"0", "default_pg"}});
  SetField(EntryAt(&tree, 0), "duration_ms", 2);
  SetField(EntryAt(&tree, 1), "time_discovered_started_ns", 0);
  SetField(EntryAt(&tree, 1), "time_discovered_completed_ns", 0);
  SetField(Field(&tree, "pg_status"), "0",
           D({{"last_enqueued_collective", "12"},
              {"last_started_collective", "-1"},
              {"last_completed_collective", "12"}}));
  SetField(Field(&tree, "pg_config"), "1",
           D({{"name", "1"}, {"desc", "pp"}, {"ranks", PickleList{{0, 1}}}}));
  std::string error;
  auto dump = DecodeFrDump(tree, &error);
  ASSERT_TRUE(dump.has_value()) << error;
  FrDump expected = SampleDump("2.10");
  expected.entries[0].duration_ms = 2.0;
  EXPECT_EQ(*dump, expected);
}

TEST(FrDumpTest, IgnoresKeysItDoesNotKnowAndReadsLaterMinorVersions) {
  PickleValue tree = SampleDumpTree("2.10");
  SetField(&tree, "nccl_comm_state", D({{"0x1234", D({{"nranks", "4"}})}}));
  SetField(EntryAt(&tree, 0), "stack_id", 7);
  SetField(&tree, "version", "2.11");
  std::string error;
  auto dump = DecodeFrDump(tree, &error);
  ASSERT_TRUE(dump.has_value()) << error;
  EXPECT_EQ(dump->version, "2.11");
  EXPECT_EQ(dump->entries, SampleDump("2.10").entries);
}

TEST(FrDumpTest, EmptyDumpWithoutEntriesDecodes) {
  PickleValue tree = SampleDumpTree("2.10");
  Erase(&tree, "entries");
  std::string error;
  auto dump = DecodeFrDump(tree, &error);
  ASSERT_TRUE(dump.has_value()) << error;
  EXPECT_TRUE(dump->entries.empty());
}

TEST(FrDumpTest, ErrorsNameTheEntryIndexAndTheKey) {
  PickleValue tree = SampleDumpTree("2.10");
  Erase(EntryAt(&tree, 1), "op_id");
  EXPECT_EQ(DecodeError(tree), "entries[1]: missing key 'op_id'");

  tree = SampleDumpTree("2.10");
  SetField(EntryAt(&tree, 0), "op_id", "12");
  EXPECT_EQ(DecodeError(tree), "entries[0].op_id: expected int, got str '12'");

  tree = SampleDumpTree("2.10");
  SetField(EntryAt(&tree, 1), "state", "running");
  EXPECT_EQ(DecodeError(tree),
            "entries[1].state: expected scheduled, started or completed, got 'running'");

  tree = SampleDumpTree("2.10");
  SetField(EntryAt(&tree, 0), "input_sizes", PickleList{{PickleList{{3, 2.5}}}});
  EXPECT_EQ(DecodeError(tree), "entries[0].input_sizes[0][1]: expected int, got float 2.5");

  tree = SampleDumpTree("2.10");
  SetField(EntryAt(&tree, 0), "frames",
           PickleList{{D({{"name", "f"}, {"filename", "x.py"}, {"line", "9"}})}});
  EXPECT_EQ(DecodeError(tree), "entries[0].frames[0].line: expected int, got str '9'");

  tree = SampleDumpTree("2.10");
  SetField(EntryAt(&tree, 0), "process_group", PickleTuple{{"0"}});
  EXPECT_EQ(DecodeError(tree),
            "entries[0].process_group: expected (name: str, desc: str), got tuple ('0',)");

  tree = SampleDumpTree("2.10");
  SetField(EntryAt(&tree, 1), "time_discovered_started_ns", "soon");
  EXPECT_EQ(DecodeError(tree),
            "entries[1].time_discovered_started_ns: expected int or None, got str 'soon'");

  tree = SampleDumpTree("2.10");
  SetField(Field(&tree, "pg_config"), "1", D({{"name", "1"}, {"desc", "pp"}, {"ranks", "[0, x]"}}));
  EXPECT_EQ(DecodeError(tree),
            "pg_config['1'].ranks: expected a rank list such as \"[0, 1]\", got str '[0, x]'");

  tree = SampleDumpTree("2.10");
  SetField(Field(&tree, "pg_status"), "0", D({{"last_enqueued_collective", "12x"}}));
  EXPECT_EQ(DecodeError(tree),
            "pg_status['0'].last_enqueued_collective: expected int or decimal str, got str '12x'");

  tree = SampleDumpTree("2.10");
  SetField(&tree, "entries", PickleList{{7}});
  EXPECT_EQ(DecodeError(tree), "entries[0]: expected dict, got int");

  EXPECT_EQ(DecodeError(PickleList{}), "dump: expected dict, got list");
}

TEST(FrDumpTest, VersionDecidesWhichKeysAreRequired) {
  for (const char* bad : {"3.0", "2.1", "2", "two", "1.9"}) {
    PickleValue tree = SampleDumpTree("2.10");
    SetField(&tree, "version", bad);
    EXPECT_EQ(DecodeError(tree), "version: unsupported dump version '" + std::string(bad) +
                                     "' (read: 2.2 and later 2.x)");
  }
  PickleValue tree = SampleDumpTree("2.10");
  Erase(&tree, "version");
  EXPECT_EQ(DecodeError(tree), "dump: missing key 'version'");

  // pg_status came with 2.3: a 2.2 dump may lack it, a 2.4 one not.
  tree = SampleDumpTree("2.4");
  Erase(&tree, "pg_status");
  EXPECT_EQ(DecodeError(tree), "dump: missing key 'pg_status'");
  tree = SampleDumpTree("2.4");
  SetField(&tree, "version", "2.2");
  Erase(&tree, "pg_status");
  std::string error;
  EXPECT_TRUE(DecodeFrDump(tree, &error).has_value()) << error;
  // The dtypes, timeout_ms and is_p2p are older: 2.2's dumper writes them (c10d/NCCLUtils.hpp at
  // version_val "2.2", NCCLTraceBuffer::getCollectiveTrace and getCollectiveTraceJson).
  for (const char* version : {"2.2", "2.4"}) {
    tree = SampleDumpTree(version);
    Erase(EntryAt(&tree, 1), "is_p2p");
    EXPECT_EQ(DecodeError(tree), "entries[1]: missing key 'is_p2p'") << version;
    tree = SampleDumpTree(version);
    Erase(EntryAt(&tree, 0), "input_dtypes");
    EXPECT_EQ(DecodeError(tree), "entries[0]: missing key 'input_dtypes'") << version;
    tree = SampleDumpTree(version);
    Erase(EntryAt(&tree, 0), "timeout_ms");
    EXPECT_EQ(DecodeError(tree), "entries[0]: missing key 'timeout_ms'") << version;
  }
}

TEST(FrDumpTest, AFrameSeveralEntriesHaveIsOneObjectInThePickleAsInTorchs) {
  // torch's dumper builds one dict per distinct frame and puts it in the list of every entry
  // whose stack has it (FlightRecorderDetail.hpp, getCollectiveTrace: all_frames); its Pickler
  // memoizes a dict held more than once (pickler.cpp, Pickler::pushIValue), so a reader gets one
  // object. The sample's all_reduce and send share their caller's frame, not their own.
  const std::string bytes = WritePickle(EncodeFrDump(SampleDump("2.10")));
  flat::FlatPickle p;
  std::string error;
  ASSERT_TRUE(ReadPickle(bytes.data(), bytes.size(), PickleLimits{}, &p, &error)) << error;
  auto find = [&](const flat::Val& dict, std::string_view key) -> const flat::Val* {
    const auto items = p.Items(dict);
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      if (p.Str(items[i]) == key) return &items[i + 1];
    }
    return nullptr;
  };
  const flat::Val* entries = find(p.root, "entries");
  ASSERT_NE(entries, nullptr);
  std::vector<std::span<const flat::Val>> frames;
  for (const flat::Val& e : p.Items(*entries)) {
    const flat::Val* f = find(e, "frames");
    ASSERT_NE(f, nullptr);
    frames.push_back(p.Items(*f));
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0][1].bits, frames[1][1].bits);  // train_step: one dict
  EXPECT_NE(frames[0][0].bits, frames[1][0].bits);  // all_reduce, send: their own
  EXPECT_EQ(*DecodeFrDump(*testing::Parse(bytes, &error), &error), SampleDump("2.10"));
}

TEST(FrDumpTest, EveryTruncationOfADumpIsRejectedWithItsOffset) {
  FrDump small = SampleDump("2.10");
  small.entries.resize(1);
  const std::string bytes = WritePickle(EncodeFrDump(small));
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string error;
    auto v = ParsePickle(bytes.data(), n, PickleLimits{}, &error);
    ASSERT_FALSE(v.has_value()) << "prefix of " << n << " bytes parsed";
    EXPECT_EQ(error.rfind("pickle: truncated input: ", 0), 0u) << n << ": " << error;
    EXPECT_NE(error.find(" at offset "), std::string::npos) << error;
  }
  std::string error;
  EXPECT_TRUE(ParsePickle(bytes.data(), bytes.size(), PickleLimits{}, &error).has_value()) << error;
}

TEST(FrDumpTest, RanksTextVariants) {
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::vector<int>>>{
           {"[]", {}}, {"[5]", {5}}, {"[0,1,2]", {0, 1, 2}}, {" [ 3 , 4 ] ", {3, 4}}}) {
    PickleValue tree = SampleDumpTree("2.10");
    SetField(Field(&tree, "pg_config"), "1", D({{"name", "1"}, {"desc", "pp"}, {"ranks", text}}));
    std::string error;
    auto dump = DecodeFrDump(tree, &error);
    ASSERT_TRUE(dump.has_value()) << text << ": " << error;
    EXPECT_EQ(dump->pg_config[1].ranks, expected) << text;
  }
  for (const char* bad : {"[0, ]", "[-1]", "0, 1", "[1 2]", "[99999999999]", ""}) {
    PickleValue tree = SampleDumpTree("2.10");
    SetField(Field(&tree, "pg_config"), "1", D({{"name", "1"}, {"desc", "pp"}, {"ranks", bad}}));
    EXPECT_NE(DecodeError(tree).find("pg_config['1'].ranks"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace ncclscope::flight_recorder
