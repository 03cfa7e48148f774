// The hand-written JSON writer: escaping that a strict parser accepts, and the analyze schema.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hang_detector/verdicts/json_writer.h"
#include "hang_detector/verdicts/verdict_json.h"

namespace ncclscope::hang_detector {
namespace {

TEST(JsonQuote, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonQuote("plain"), "\"plain\"");
  EXPECT_EQ(JsonQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonQuote("l1\nl2\tx\r"), "\"l1\\nl2\\tx\\r\"");
  EXPECT_EQ(JsonQuote(std::string("\x01\x1f\x7f", 3)), "\"\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(JsonQuote(std::string("nul\0x", 5)), "\"nul\\u0000x\"");
}

TEST(JsonQuote, KeepsUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(JsonQuote("tp (3f2a…)"), "\"tp (3f2a…)\"");
  EXPECT_EQ(JsonQuote("\xff"), "\"\xEF\xBF\xBD\"");
  EXPECT_EQ(JsonQuote("\xC0\x80"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");  // overlong NUL
  EXPECT_EQ(JsonQuote("\xE2\x82"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");  // truncated sequence
  // Every byte value round-trips through a strict parser.
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  nlohmann::json parsed;
  EXPECT_NO_THROW(parsed = nlohmann::json::parse(JsonQuote(all)));
  EXPECT_EQ(parsed.get<std::string>().size(), 128u + 128u * 3u);  // high bytes become U+FFFD
}

TEST(JsonWriter, WritesNestedDocumentsAParserReadsBack) {
  for (int indent : {0, 2}) {
    JsonWriter w(indent);
    w.BeginObject();
    w.Key("a").Int(-3).Key("b").UInt(18446744073709551615ULL).Key("c").Double(0.1);
    w.Key("d").Double(2).Key("nan").Double(0.0 / 0.0).Key("t").Bool(true).Key("n").Null();
    w.Key("empty").BeginArray().EndArray().Key("o").BeginObject().EndObject();
    w.Key("list").IntArray({1, 2}).Key("s").StringArray({"x\"y"});
    w.EndObject();
    const auto j = nlohmann::json::parse(w.str());
    EXPECT_EQ(j["a"], -3);
    EXPECT_EQ(j["b"].get<uint64_t>(), 18446744073709551615ULL);
    EXPECT_DOUBLE_EQ(j["c"].get<double>(), 0.1);
    EXPECT_TRUE(j["d"].is_number_float());
    EXPECT_TRUE(j["nan"].is_null());
    EXPECT_TRUE(j["empty"].empty());
    EXPECT_EQ(j["list"], nlohmann::json({1, 2}));
    EXPECT_EQ(j["s"][0], "x\"y");
    EXPECT_EQ(w.str().find('\n') != std::string::npos, indent != 0);
  }
}

TEST(RenderJson, HasTheAnalyzeSchema) {
  Analysis a;
  Verdict v;
  v.cls = VerdictClass::kMissing;
  v.comm_id = 0xabc;
  v.comm_name = "dp\n\"x\"";
  v.op = "allreduce";
  v.seq = 2;
  v.culprits = {2};
  v.victims = {0, 4};
  v.since_s = 5.5;
  v.summary = "rank 2 never issued it";
  v.confirmed = true;
  v.confirmed_by = "waited 65 s, past 60 s (the floor)";
  v.activity = "rank 2: alive (pid 12, sleeping), outside NCCL for 65 s since dp allreduce #1";
  v.evidence.push_back({2, 7, true, "last is #1"});
  v.evidence.push_back({3, 0, false, "heartbeat"});
  a.verdicts.push_back(v);
  a.waiting.push_back({0xabc, "dp", "allreduce", 2, {0, 4}, {}, {2}, 5.5});
  a.input.files = 8;
  a.input.unreadable = {"bad.ring: truncated"};
  const auto j = nlohmann::json::parse(RenderJson(a));
  EXPECT_EQ(j["exit_code"], 2);
  EXPECT_EQ(j["stage"], "hang");
  EXPECT_EQ(j["usable"], true);
  const auto& jv = j["verdicts"][0];
  EXPECT_EQ(jv["class"], "missing");
  EXPECT_EQ(jv["confirmed"], true);
  EXPECT_FALSE(jv.contains("confirm_after_s"));
  EXPECT_EQ(jv["confirmed_by"], "waited 65 s, past 60 s (the floor)");
  EXPECT_NE(jv["activity"].get<std::string>().find("outside NCCL"), std::string::npos);
  EXPECT_EQ(jv["comm_id"], "0000000000000abc");
  EXPECT_EQ(jv["comm_name"], "dp\n\"x\"");
  EXPECT_EQ(jv["culprits"], nlohmann::json({2}));
  EXPECT_EQ(jv["evidence"][0]["record_index"], 7);
  EXPECT_FALSE(jv["evidence"][1].contains("record_index"));
  EXPECT_FALSE(jv["headline"].get<std::string>().empty());
  EXPECT_EQ(j["waiting"][0]["not_issued"], nlohmann::json({2}));
  EXPECT_EQ(j["input"]["files"], 8);
  EXPECT_EQ(j["input"]["unreadable"][0], "bad.ring: truncated");
}

Analysis Suspect() {
  Analysis a;
  Verdict v;
  v.cls = VerdictClass::kMissing;
  v.comm_id = 0xabc;
  v.op = "allreduce";
  v.seq = 2;
  v.culprits = {2};
  v.since_s = 8;
  v.confirm_after_s = 60;
  a.verdicts.push_back(v);
  return a;
}

TEST(RenderJson, ASuspectSaysWhenItWouldBeConfirmed) {
  const auto j = nlohmann::json::parse(RenderJson(Suspect()));
  EXPECT_EQ(j["exit_code"], 4);
  EXPECT_EQ(j["stage"], "suspect");
  EXPECT_EQ(j["verdicts"][0]["confirmed"], false);
  EXPECT_EQ(j["verdicts"][0]["confirm_after_s"], 60);
  EXPECT_NE(j["verdicts"][0]["headline"].get<std::string>().find("SUSPECT (missing)"),
            std::string::npos);
}

TEST(RenderJson, AResolvedIncidentKeepsItsVerdictsButNotItsStage) {
  const auto j = nlohmann::json::parse(RenderResolvedJson(Suspect(), 31.5));
  EXPECT_EQ(j["stage"], "resolved");
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["resolved_after_s"], 31.5);
  EXPECT_EQ(j["verdicts"][0]["class"], "missing");
}

}  // namespace
}  // namespace ncclscope::hang_detector
