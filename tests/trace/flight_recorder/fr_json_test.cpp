// The JSON form of FR dumps: torch's text (an example in torch's JSON typing, and the exact bytes
// its dump_json would write) reads as the dump it means, EncodeFrDumpJson round-trips every
// version, hostile text is refused with a reason and a place, and CPython's json module reads what
// we write as the same document.
#include "trace/flight_recorder/fr_json.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tests/trace/flight_recorder/fr_sample_dumps.h"
#include "tests/trace/temp_dir.h"

namespace ncclscope::flight_recorder {
namespace {

// A JSON dump (format version 2.10) as FlightRecorderDetail.hpp's dump_json writes one.
constexpr const char* kReferenceExample = R"({
  "version": "2.10",
  "comm_lib_version": "2.27.3",
  "pg_config": {
    "0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"},
    "1": {"name": "1", "desc": "tp",         "ranks": "[0, 1]"}
  },
  "pg_status": {
    "0": {"last_enqueued_collective": "12", "last_started_collective": "-1",
          "last_completed_collective": "11"}
  },
  "entries": [
    {"record_id": 41, "pg_id": 0, "process_group": ["0", "default_pg"],
     "thread_name": "<name>", "thread_id": "<std::thread::id as string>",
     "collective_seq_id": 12, "p2p_seq_id": 0, "op_id": 12,
     "profiling_name": "nccl:all_reduce",
     "time_created_ns": 1724779239936775119,
     "input_sizes": [[3, 4]], "input_dtypes": ["Float"],
     "output_sizes": [[3, 4]], "output_dtypes": ["Float"],
     "state": "scheduled",
     "time_discovered_started_ns": 0, "time_discovered_completed_ns": 0,
     "retired": false, "timeout_ms": 600000, "is_p2p": false}
  ]
})";

std::optional<FrDump> ParseAndDecode(const std::string& text, std::string* error) {
  auto tree = ParseFrJson(text, error);
  if (!tree) return std::nullopt;
  return DecodeFrDump(*tree, error);
}

// The error ParseFrJson gives for `text`; fails the test if the text parses.
std::string ParseError(const std::string& text) {
  std::string error;
  auto tree = ParseFrJson(text, &error);
  EXPECT_FALSE(tree.has_value()) << "parsed: " << text.substr(0, 80);
  EXPECT_FALSE(error.empty());
  return error;
}

// SampleDump without stack frames: the JSON dump has none.
FrDump SampleDumpForJson(const std::string& version) {
  FrDump d = testing::SampleDump(version);
  for (FrEntry& e : d.entries) e.frames.reset();
  return d;
}

// One entry whose strings hold everything JSON must escape or keep: quotes, backslash, control
// characters, DEL, non-ASCII.
FrDump AwkwardStringsDump() {
  FrDump d = SampleDumpForJson("2.10");
  d.comm_lib_version = "2.27.3+cuda12.9";
  d.pg_config[1].desc = "pp \"stage\" \\ /x";
  d.entries[0].profiling_name =
      std::string("nccl:caf\xc3\xa9 \xe2\x9c\x93 tab\there\nnul\x01 del\x7f");
  d.entries[0].thread_name = "\xe4\xb8\xbb\xe7\xba\xbf\xe7\xa8\x8b";
  d.entries[1].duration_ms = 1234.5;
  d.entries[1].time_discovered_started_ns = 1724779239938775200;
  return d;
}

TEST(FrJsonTest, ReferenceExampleDecodes) {
  std::string error;
  auto tree = ParseFrJson(kReferenceExample, &error);
  ASSERT_TRUE(tree.has_value()) << error;
  // Keys in document order, values in their JSON typing.
  const PickleDict& top = *tree->AsDict();
  ASSERT_EQ(top.items.size(), 5u);
  EXPECT_EQ(std::get<std::string>(top.items[0].first), "version");
  EXPECT_EQ(std::get<std::string>(top.items[4].first), "entries");
  const PickleValue& entry = tree->AsDict()->Find("entries")->AsList()->items[0];
  EXPECT_EQ(*entry.AsDict()->Find("process_group"), PickleValue(PickleList{{"0", "default_pg"}}));
  EXPECT_EQ(*entry.AsDict()->Find("time_created_ns"), PickleValue(int64_t{1724779239936775119}));

  auto dump = DecodeFrDump(*tree, &error);
  ASSERT_TRUE(dump.has_value()) << error;
  EXPECT_EQ(dump->version, "2.10");
  EXPECT_EQ(dump->comm_lib_version, "2.27.3");
  ASSERT_EQ(dump->pg_config.size(), 2u);
  EXPECT_EQ(dump->pg_config[0], (FrPgConfig{"0", "0", "default_pg", {0, 1, 2, 3}}));
  EXPECT_EQ(dump->pg_config[1], (FrPgConfig{"1", "1", "tp", {0, 1}}));
  ASSERT_EQ(dump->pg_status.size(), 1u);
  EXPECT_EQ(dump->pg_status[0], (FrPgStatus{"0", 12, -1, 11}));
  ASSERT_EQ(dump->entries.size(), 1u);
  const FrEntry& e = dump->entries[0];
  EXPECT_EQ(e.record_id, 41);
  EXPECT_EQ(e.pg_name, "0");
  EXPECT_EQ(e.pg_desc, "default_pg");
  EXPECT_EQ(e.thread_name, "<name>");
  EXPECT_EQ(e.thread_id, "<std::thread::id as string>");
  EXPECT_EQ(e.collective_seq_id, 12);
  EXPECT_EQ(e.op_id, 12);
  EXPECT_EQ(e.profiling_name, "nccl:all_reduce");
  EXPECT_EQ(e.time_created_ns, 1724779239936775119);
  EXPECT_EQ(e.input_sizes, (std::vector<std::vector<int64_t>>{{3, 4}}));
  EXPECT_EQ(e.output_dtypes, std::vector<std::string>{"Float"});
  EXPECT_EQ(e.state, FrState::kScheduled);
  EXPECT_FALSE(e.time_discovered_started_ns.has_value());  // JSON's 0 means "not seen"
  EXPECT_FALSE(e.time_discovered_completed_ns.has_value());
  EXPECT_FALSE(e.duration_ms.has_value());
  EXPECT_FALSE(e.retired);
  EXPECT_EQ(e.timeout_ms, 600000);
  EXPECT_FALSE(e.is_p2p);
}

// The bytes torch's dump_json writes: nlohmann's compact dump() of std::map-backed objects,
// so every object's keys are sorted.
TEST(FrJsonTest, WritesTheBytesTorchWrites) {
  FrDump d;
  d.version = "2.10";
  d.comm_lib_version = "2.27.3";
  d.pg_config = {{"0", "0", "default_pg", {0, 1}}};
  d.pg_status = {{"0", 7, -1, 6}};
  FrEntry e;
  e.record_id = 3;
  e.pg_name = "0";
  e.pg_desc = "default_pg";
  e.collective_seq_id = 7;
  e.op_id = 7;
  e.profiling_name = "nccl:all_reduce";
  e.time_created_ns = 100;
  e.duration_ms = 0.5;
  e.input_sizes = e.output_sizes = {{2}};
  e.input_dtypes = e.output_dtypes = {"Float"};
  e.state = FrState::kStarted;
  e.time_discovered_started_ns = 150;
  e.timeout_ms = 600000;
  e.thread_id = "1";
  e.thread_name = "main";
  e.frames = std::vector<FrFrame>{{"f", "a.py", 1}};
  d.entries = {e};
  EXPECT_EQ(EncodeFrDumpJson(d),
            R"({"comm_lib_version":"2.27.3","entries":[{"collective_seq_id":7,"duration_ms":0.5,)"
            R"("input_dtypes":["Float"],"input_sizes":[[2]],"is_p2p":false,"op_id":7,)"
            R"("output_dtypes":["Float"],"output_sizes":[[2]],"p2p_seq_id":0,"pg_id":0,)"
            R"("process_group":["0","default_pg"],"profiling_name":"nccl:all_reduce",)"
            R"("record_id":3,"retired":false,"state":"started","thread_id":"1",)"
            R"("thread_name":"main","time_created_ns":100,"time_discovered_completed_ns":0,)"
            R"("time_discovered_started_ns":150,"timeout_ms":600000}],)"
            R"("pg_config":{"0":{"desc":"default_pg","name":"0","ranks":"[0, 1]"}},)"
            R"("pg_status":{"0":{"last_completed_collective":"6","last_enqueued_collective":"7",)"
            R"("last_started_collective":"-1"}},"version":"2.10"})");

  // No entries: no "entries" key at all.
  d.entries.clear();
  EXPECT_EQ(EncodeFrDumpJson(d),
            R"({"comm_lib_version":"2.27.3",)"
            R"("pg_config":{"0":{"desc":"default_pg","name":"0","ranks":"[0, 1]"}},)"
            R"("pg_status":{"0":{"last_completed_collective":"6","last_enqueued_collective":"7",)"
            R"("last_started_collective":"-1"}},"version":"2.10"})");
  std::string error;
  auto back = ParseAndDecode(EncodeFrDumpJson(d), &error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(*back, d);
}

TEST(FrJsonTest, RoundTripsEveryVersion) {
  for (const char* version : {"2.2", "2.4", "2.7", "2.10"}) {
    SCOPED_TRACE(version);
    const FrDump dump = SampleDumpForJson(version);
    const std::string text = EncodeFrDumpJson(dump);
    std::string error;
    auto tree = ParseFrJson(text, &error);
    ASSERT_TRUE(tree.has_value()) << error;
    // The JSON typing, as dump_json writes it.
    const PickleDict& top = *tree->AsDict();
    const PickleDict& sent = *top.Find("entries")->AsList()->items[1].AsDict();
    EXPECT_NE(sent.Find("process_group")->AsList(), nullptr);
    EXPECT_EQ(*sent.Find("time_discovered_started_ns"), PickleValue(0));
    EXPECT_EQ(top.Find("entries")->AsList()->items[0].AsDict()->Find("frames"), nullptr);
    if (const PickleValue* status = top.Find("pg_status")) {
      EXPECT_EQ(*status->AsDict()->Find("0")->AsDict()->Find("last_started_collective"),
                PickleValue("-1"));
    }
    EXPECT_EQ(top.Find("comm_lib_version") != nullptr, std::string(version) == "2.10");
    EXPECT_EQ(top.Find("nccl_version") != nullptr, std::string(version) == "2.7");
    EXPECT_EQ(top.Find("pg_status") != nullptr, std::string(version) != "2.2");

    auto back = DecodeFrDump(*tree, &error);
    ASSERT_TRUE(back.has_value()) << error;
    EXPECT_EQ(*back, dump);
  }
}

TEST(FrJsonTest, StringsAreEscapedAndKeptAsUtf8) {
  const FrDump dump = AwkwardStringsDump();
  const std::string text = EncodeFrDumpJson(dump);
  EXPECT_NE(text.find(R"(tab\there\nnul\u0001 del)"), std::string::npos) << text;
  EXPECT_NE(text.find("caf\xc3\xa9 \xe2\x9c\x93"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(pp \"stage\" \\ /x)"), std::string::npos) << text;
  std::string error;
  auto back = ParseAndDecode(text, &error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(*back, dump);

  // Bytes that are not UTF-8 cannot be JSON text: written as U+FFFD, so the output still parses.
  FrDump bad = dump;
  bad.entries[0].profiling_name = "nccl:\xff\xfe";
  back = ParseAndDecode(EncodeFrDumpJson(bad), &error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(back->entries[0].profiling_name, "nccl:\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(FrJsonTest, RepeatedKeyKeepsItsFirstPlaceAndLastValue) {
  std::string error;
  auto tree = ParseFrJson(R"({"a": 1, "b": 2, "a": 3})", &error);
  ASSERT_TRUE(tree.has_value()) << error;
  PickleDict expected;
  expected.items.emplace_back(std::string("a"), 3);
  expected.items.emplace_back(std::string("b"), 2);
  EXPECT_EQ(*tree, PickleValue(expected));
}

TEST(FrJsonTest, MalformedTextNamesTheByte) {
  const std::string text = EncodeFrDumpJson(SampleDumpForJson("2.10"));
  // Every proper prefix is incomplete JSON.
  for (size_t n = 0; n < text.size(); n += 7) {
    const std::string error = ParseError(text.substr(0, n));
    EXPECT_NE(error.find("JSON at byte "), std::string::npos) << n << ": " << error;
  }
  EXPECT_NE(ParseError("").find("unexpected end of input"), std::string::npos);
  EXPECT_NE(ParseError(R"({"version": "2.10"} x)").find("byte 21"), std::string::npos);
  // The place is named too where the text is inside a value.
  EXPECT_NE(ParseError(R"({"entries": [{"op_id": 1,]})").find("(in entries[0]"), std::string::npos);
  // nlohmann checks UTF-8 in strings and refuses a lone surrogate escape.
  EXPECT_NE(ParseError("{\"version\": \"2.\xff\"}").find("ill-formed UTF-8"), std::string::npos);
  EXPECT_NE(ParseError(R"({"v": "\ud800"})").find("surrogate"), std::string::npos);
}

TEST(FrJsonTest, NestingIsBounded) {
  auto nested = [](int depth) {
    std::string text;
    for (int i = 0; i < depth; ++i) text += R"({"a":)";
    text += "1";
    for (int i = 0; i < depth; ++i) text += "}";
    return text;
  };
  std::string error;
  EXPECT_TRUE(ParseFrJson(nested(kFrJsonMaxDepth), &error).has_value()) << error;
  EXPECT_NE(ParseError(nested(kFrJsonMaxDepth + 1)).find("nesting deeper than 64 levels"),
            std::string::npos);
  // A million levels: refused at level 65 without reading on.
  const std::string deep = std::string(R"({"x":)") + std::string(1000000, '[');
  const std::string error_deep = ParseError(deep);
  EXPECT_EQ(error_deep.rfind("x[0][0]", 0), 0u) << error_deep.substr(0, 100);
  EXPECT_NE(error_deep.find("nesting deeper than 64 levels"), std::string::npos);
}

TEST(FrJsonTest, IntegersOutsideInt64AreRefusedWithTheirPlace) {
  std::string error;
  auto tree =
      ParseFrJson(R"({"lo": -9223372036854775808, "hi": 9223372036854775807, "f": 2.5})", &error);
  ASSERT_TRUE(tree.has_value()) << error;
  EXPECT_EQ(*tree->AsDict()->Find("lo"), PickleValue(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(*tree->AsDict()->Find("hi"), PickleValue(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(*tree->AsDict()->Find("f"), PickleValue(2.5));

  EXPECT_EQ(ParseError(R"({"entries": [{"op_id": 9223372036854775808}]})"),
            "entries[0].op_id: integer 9223372036854775808 is outside int64");
  EXPECT_EQ(ParseError(R"({"a": [-9223372036854775809]})"),
            "a[0]: integer -9223372036854775809 is outside int64");
  EXPECT_EQ(ParseError(R"({"a": 123456789012345678901234567890})"),
            "a: integer 123456789012345678901234567890 is outside int64");
  // A number outside double is nlohmann's own parse error.
  EXPECT_EQ(ParseError(R"({"duration_ms": 1e400})"),
            "JSON at byte 21 (in duration_ms): number overflow parsing '1e400'");
}

TEST(FrJsonTest, TopLevelMustBeAnObject) {
  EXPECT_EQ(ParseError("[1, 2]"), "top level: expected a JSON object, got list");
  EXPECT_EQ(ParseError(R"("2.10")"), "top level: expected a JSON object, got str");
  EXPECT_EQ(ParseError("42"), "top level: expected a JSON object, got int");
  EXPECT_EQ(ParseError("null"), "top level: expected a JSON object, got NoneType");
}

TEST(FrJsonTest, DecoderNamesTheFieldOfAWrongJsonType) {
  std::string error;
  const std::string text = R"({"version": "2.10", "pg_config": {}, "pg_status": {},)"
                           R"( "entries": [{"record_id": "41"}]})";
  EXPECT_FALSE(ParseAndDecode(text, &error).has_value());
  EXPECT_NE(error.find("entries[0].record_id"), std::string::npos) << error;
}

bool HavePython() {
  return std::system("command -v python3 >/dev/null 2>&1") == 0;
}
std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

// CPython's json reads each file, and writing it back the way nlohmann's compact dump() writes
// (sorted keys, no spaces, UTF-8 kept) gives the same bytes: same escapes, same numbers.
constexpr const char* kScript = R"PY(
import json, sys
for path in sys.argv[1:]:
    text = open(path, encoding="utf-8").read()
    d = json.loads(text)
    again = json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    typed = all(isinstance(e["process_group"], list) for e in d["entries"]) and all(
        isinstance(v, str) for s in d.get("pg_status", {}).values() for v in s.values()) and all(
        isinstance(c["ranks"], str) for c in d["pg_config"].values())
    print(path.rsplit("/", 1)[1], "same" if again == text else "differ:\n" + again, typed)
)PY";

TEST(FrJsonTest, CPythonReadsWhatWeWrite) {
  if (!HavePython()) GTEST_SKIP() << "python3 is not on PATH; the cross-check needs CPython";
  ncclscope::testing::TempDir dir;
  std::string args;
  std::string expected;
  auto add = [&](const std::string& name, const FrDump& dump) {
    WriteFile(dir.path() + "/" + name, EncodeFrDumpJson(dump));
    args += " " + dir.path() + "/" + name;
    expected += name + " same True\n";
  };
  for (const char* version : {"2.2", "2.4", "2.7", "2.10"}) {
    add("v" + std::string(version) + ".json", SampleDumpForJson(version));
  }
  add("strings.json", AwkwardStringsDump());
  WriteFile(dir.path() + "/check.py", kScript);
  const std::string command =
      "python3 " + dir.path() + "/check.py" + args + " > " + dir.path() + "/out.txt 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << ReadFile(dir.path() + "/out.txt");
  EXPECT_EQ(ReadFile(dir.path() + "/out.txt"), expected);
}

}  // namespace
}  // namespace ncclscope::flight_recorder
