// The plain-data pickle reader: each accepted opcode, the memo, and every way a file can be bad.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>

#include "tests/trace/flight_recorder/pickle_bytes.h"
#include "trace/flight_recorder/pickle_opcodes.h"
#include "trace/flight_recorder/pickle_reader.h"

namespace ncclscope::flight_recorder {
namespace {

using testing::Bytes;
using testing::Parse;

PickleValue MustParse(const std::string& bytes) {
  std::string error;
  auto v = Parse(bytes, &error);
  EXPECT_TRUE(v.has_value()) << error;
  return v.value_or(PickleValue::None());
}

std::string MustFail(const std::string& bytes, const PickleLimits& limits = PickleLimits{}) {
  std::string error;
  auto v = ParsePickle(bytes.data(), bytes.size(), limits, &error);
  EXPECT_FALSE(v.has_value()) << DescribePickleValue(*v);
  EXPECT_FALSE(error.empty());
  return error;
}

// PROTO 2 + body + STOP.
std::string P2(const std::string& body) {
  return Bytes({0x80, 2}) + body + ".";
}

TEST(PickleReaderTest, ScalarsAsTorchAndCPythonWriteThem) {
  EXPECT_EQ(MustParse(P2("N")), PickleValue::None());
  EXPECT_EQ(MustParse(P2(Bytes({0x88}))), PickleValue(true));
  EXPECT_EQ(MustParse(P2(Bytes({0x89}))), PickleValue(false));
  EXPECT_EQ(MustParse(P2(Bytes({'K', 255}))), PickleValue(255));
  EXPECT_EQ(MustParse(P2(Bytes({'M', 0xff, 0xff}))), PickleValue(65535));
  EXPECT_EQ(MustParse(P2(Bytes({'J', 0xff, 0xff, 0xff, 0xff}))), PickleValue(-1));
  EXPECT_EQ(MustParse(P2(Bytes({'J', 0, 0, 0, 0x80}))), PickleValue(INT32_MIN));
  // 1.5 as a big-endian IEEE double.
  EXPECT_EQ(MustParse(P2(Bytes({'G', 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}))), PickleValue(1.5));
  EXPECT_EQ(MustParse(P2(Bytes({'X', 3, 0, 0, 0, 'a', 'b', 'c'}))), PickleValue("abc"));
  EXPECT_EQ(MustParse(P2(Bytes({0x8c, 2, 0xc3, 0xa9}))), PickleValue("\xc3\xa9"));
  EXPECT_EQ(MustParse(P2(Bytes({0x8d, 1, 0, 0, 0, 0, 0, 0, 0, 'z'}))), PickleValue("z"));
  EXPECT_EQ(MustParse(P2(Bytes({'C', 2, 0, 1}))), PickleValue(PickleBytes{Bytes({0, 1})}));
  EXPECT_EQ(MustParse(P2(Bytes({'B', 1, 0, 0, 0, 7}))), PickleValue(PickleBytes{Bytes({7})}));
  EXPECT_EQ(MustParse(P2(Bytes({0x8e, 1, 0, 0, 0, 0, 0, 0, 0, 9}))),
            PickleValue(PickleBytes{Bytes({9})}));
  // Protocol 0 streams need no PROTO.
  EXPECT_EQ(MustParse("N."), PickleValue::None());
}

TEST(PickleReaderTest, Long1IsTwosComplementOfAnyLengthThatFitsInt64) {
  EXPECT_EQ(MustParse(P2(Bytes({0x8a, 0}))), PickleValue(0));
  // torch writes 8 bytes for every value outside int32 (pickler.cpp, Pickler::pushInt).
  EXPECT_EQ(MustParse(P2(Bytes({0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x80}))),
            PickleValue(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(MustParse(P2(Bytes({0x8a, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}))),
            PickleValue(std::numeric_limits<int64_t>::max()));
  // CPython writes the fewest bytes: 2^31 is 5 bytes, -2^31-1 too.
  EXPECT_EQ(MustParse(P2(Bytes({0x8a, 5, 0, 0, 0, 0x80, 0}))), PickleValue(int64_t{1} << 31));
  EXPECT_EQ(MustParse(P2(Bytes({0x8a, 5, 0xff, 0xff, 0xff, 0x7f, 0xff}))),
            PickleValue(-(int64_t{1} << 31) - 1));
  // 2^63 needs 9 bytes and does not fit.
  std::string error = MustFail(P2(Bytes({0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0x80, 0})));
  EXPECT_EQ(error, "pickle: LONG1 integer does not fit in int64 at offset 2");
  // 9 bytes that only repeat the sign still fit.
  EXPECT_EQ(MustParse(P2(Bytes({0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}))),
            PickleValue(-1));
  EXPECT_NE(MustFail(P2(Bytes({0x8b, 1, 0, 0, 0, 1}))).find("LONG4"), std::string::npos);
}

TEST(PickleReaderTest, ValuesTakenFromBelowAnOpenMarkAreRefused) {
  // EMPTY_LIST, BININT1 1, MARK, APPEND (takes the int and the list from below the MARK),
  // APPENDS: the MARK now points past the stack. Found by the direct decoder's differential fuzz.
  const std::string error = MustFail(P2("]K\x01(ae"));
  EXPECT_NE(error.find("below its MARK"), std::string::npos) << error;
}

TEST(PickleReaderTest, ContainersKeepOrderAndKeyTypes) {
  // [1, [2, 3]] with APPEND and APPENDS; (); (1,); (1, 2); (1, 2, 3); MARK ... TUPLE.
  EXPECT_EQ(MustParse(P2(Bytes({']', 'K', 1, 'a', ']', '(', 'K', 2, 'K', 3, 'e', 'a'}))),
            PickleValue(PickleList{{1, PickleList{{2, 3}}}}));
  EXPECT_EQ(MustParse(P2(")")), PickleValue(PickleTuple{}));
  EXPECT_EQ(MustParse(P2(Bytes({'K', 1, 0x85}))), PickleValue(PickleTuple{{1}}));
  EXPECT_EQ(MustParse(P2(Bytes({'K', 1, 'K', 2, 0x86}))), PickleValue(PickleTuple{{1, 2}}));
  EXPECT_EQ(MustParse(P2(Bytes({'K', 1, 'K', 2, 'K', 3, 0x87}))),
            PickleValue(PickleTuple{{1, 2, 3}}));
  EXPECT_EQ(MustParse(P2(Bytes({'(', 'K', 1, 'K', 2, 'K', 3, 'K', 4, 't'}))),
            PickleValue(PickleTuple{{1, 2, 3, 4}}));
  // {'b': 1, 2: None} then SETITEM 'a': True: insertion order, not sorted.
  PickleDict expected;
  expected.items.emplace_back(std::string("b"), 1);
  expected.items.emplace_back(int64_t{2}, PickleValue::None());
  expected.items.emplace_back(std::string("a"), true);
  EXPECT_EQ(MustParse(P2(Bytes(
                {'}', '(', 0x8c, 1, 'b', 'K', 1, 'K', 2, 'N', 'u', 0x8c, 1, 'a', 0x88, 's'}))),
            PickleValue(expected));
}

TEST(PickleReaderTest, RepeatedDictKeyKeepsFirstPlaceAndLastValueLikePython) {
  // {'a': 1, 'b': 2, 'a': 3} reads as {'a': 3, 'b': 2}, in small and in indexed dicts.
  PickleValue v = MustParse(
      P2(Bytes({'}', '(', 0x8c, 1, 'a', 'K', 1, 0x8c, 1, 'b', 'K', 2, 0x8c, 1, 'a', 'K', 3, 'u'})));
  PickleDict expected;
  expected.items.emplace_back(std::string("a"), 3);
  expected.items.emplace_back(std::string("b"), 2);
  EXPECT_EQ(v, PickleValue(expected));

  std::string body = Bytes({'}', '('});
  for (int k = 0; k < 40; ++k) body += Bytes({'K', k, 'K', k});
  body += Bytes({'K', 5, 'K', 99, 'u'});
  PickleValue big = MustParse(P2(body));
  ASSERT_EQ(big.AsDict()->items.size(), 40u);
  EXPECT_EQ(big.AsDict()->items[5].second, PickleValue(99));
}

TEST(PickleReaderTest, MemoGetSeesTheFilledContainerLikeCPython) {
  // CPython memoizes a list right after EMPTY_LIST, before its items: x = [1, 2]; (x, x).
  PickleValue v = MustParse(P2(Bytes({']', 'q', 0, '(', 'K', 1, 'K', 2, 'e', 'h', 0, 0x86})));
  EXPECT_EQ(v, PickleValue(PickleTuple{{PickleList{{1, 2}}, PickleList{{1, 2}}}}));
  // Protocol 4: FRAME, MEMOIZE (ids by memo size), SHORT_BINUNICODE.
  std::string p4 = Bytes({0x80, 4,    0x95, 14,  0,    0,   0, 0,   0,   0, 0,    ']', 0x94,
                          '(',  0x8c, 1,    's', 0x94, 'h', 1, 'e', 'h', 0, 0x86, '.'});
  EXPECT_EQ(MustParse(p4),
            PickleValue(PickleTuple{{PickleList{{"s", "s"}}, PickleList{{"s", "s"}}}}));
  // torch memoizes a shared container after filling it (Pickler::pushIValue), as FR's frame
  // dicts shared between entries: [[{'name': 'a'}], [{'name': 'a'}]].
  PickleValue frame = PickleDict{{{std::string("name"), "a"}}};
  EXPECT_EQ(MustParse(P2(Bytes({']', '(', ']', '(', '}', '(', 'X', 4,   0, 0,   0,   'n',
                                'a', 'm', 'e', 'q', 0,   'X', 1,   0,   0, 0,   'a', 'q',
                                1,   'u', 'q', 2,   'e', ']', '(', 'h', 2, 'e', 'e'}))),
            PickleValue(PickleList{{PickleList{{frame}}, PickleList{{frame}}}}));
  // torch memoizes every string and gets repeats; LONG_BINPUT/LONG_BINGET past id 255.
  EXPECT_EQ(MustParse(P2(
                Bytes({'X', 1, 0, 0, 0, 'k', 'r', 0x10, 0x27, 0, 0, 'j', 0x10, 0x27, 0, 0, 0x86}))),
            PickleValue(PickleTuple{{"k", "k"}}));
}

TEST(PickleReaderTest, MemoErrorsAndCyclesAreRejected) {
  EXPECT_EQ(MustFail(P2(Bytes({'h', 7}))), "pickle: memo id 7 was never stored at offset 2");
  EXPECT_EQ(MustFail(P2(Bytes({'j', 0, 1, 0, 0}))),
            "pickle: memo id 256 was never stored at offset 2");
  EXPECT_EQ(MustFail(P2(Bytes({'q', 0}))), "pickle: BINPUT on an empty stack at offset 2");
  // x = []; x.append(x): a list put into itself.
  EXPECT_EQ(MustFail(P2(Bytes({']', 'q', 0, 'h', 0, 'a'}))),
            "pickle: APPEND would put a container into itself at offset 7");
  // a = []; b = []; a.append(b); then b.append(a) would close a cycle: b is already inside a.
  std::string error =
      MustFail(P2(Bytes({']', 'q', 0, ']', 'q', 1, 'a', 'h', 1, 'h', 0, 'a', '0'})));
  EXPECT_EQ(error,
            "pickle: APPEND into a list that is already inside another container at offset 13");
  // d = {}; (d,) puts d inside a tuple; d[1] = None afterwards is refused.
  EXPECT_EQ(MustFail(P2(Bytes({'}', 'q', 0, 0x85, 'h', 0, 'K', 1, 'N', 's'}))),
            "pickle: SETITEM into a dict that is already inside another container at offset 11");
  EXPECT_EQ(MustFail(P2(Bytes({'}', ']', 'N', 's'}))),
            "pickle: dict key of type list (only str and int) at offset 5");
}

TEST(PickleReaderTest, EveryOpcodeThatBuildsOrCallsIsRejectedByName) {
  const std::set<uint8_t> accepted = {
      op::kProto,       op::kFrame,      op::kStop,          op::kMark,       op::kNone,
      op::kNewTrue,     op::kNewFalse,   op::kBinInt,        op::kBinInt1,    op::kBinInt2,
      op::kLong1,       op::kLong4,      op::kBinFloat,      op::kBinUnicode, op::kShortBinUnicode,
      op::kBinUnicode8, op::kBinBytes,   op::kShortBinBytes, op::kBinBytes8,  op::kEmptyList,
      op::kAppend,      op::kAppends,    op::kEmptyTuple,    op::kTuple,      op::kTuple1,
      op::kTuple2,      op::kTuple3,     op::kEmptyDict,     op::kSetItem,    op::kSetItems,
      op::kBinPut,      op::kLongBinPut, op::kMemoize,       op::kBinGet,     op::kLongBinGet};
  int rejected = 0;
  for (int b = 0; b < 256; ++b) {
    if (accepted.count(static_cast<uint8_t>(b)) != 0) continue;
    // A string argument and a STOP after the opcode, so that text opcodes see a full line.
    const std::string input = P2(Bytes({b}) + "os\nsystem\n");
    std::string error = MustFail(input);
    char hex[8];
    std::snprintf(hex, sizeof(hex), "0x%02x", b);
    if (const char* name = op::OpcodeName(static_cast<uint8_t>(b))) {
      EXPECT_EQ(
          error.rfind(std::string("pickle: unsupported opcode ") + name + " (" + hex + ")", 0), 0u)
          << error;
      ++rejected;
    } else {
      EXPECT_EQ(error, std::string("pickle: unknown opcode ") + hex + " at offset 2");
    }
    EXPECT_NE(error.find("at offset 2"), std::string::npos) << error;
  }
  // GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, PERSID, BINPERSID, EXT1-4,
  // the protocol 0 text opcodes, sets, POP, DUP, buffers: 33 of the 68 named opcodes.
  EXPECT_EQ(rejected, 33);
}

TEST(PickleReaderTest, MalformedStreamsSayWhatAndWhere) {
  EXPECT_EQ(MustFail(""), "pickle: truncated input: no STOP opcode at offset 0");
  EXPECT_EQ(MustFail(Bytes({0x80, 2, 'N'})), "pickle: truncated input: no STOP opcode at offset 3");
  EXPECT_EQ(MustFail(Bytes({0x80, 2, 'X', 9, 0, 0, 0, 'a'})),
            "pickle: truncated input: BINUNICODE needs 9 more bytes, 1 left at offset 2");
  EXPECT_EQ(MustFail(P2("N") + "xy"), "pickle: 2 bytes after STOP at offset 4");
  EXPECT_EQ(MustFail(P2("NN")), "pickle: STOP with 2 values on the stack instead of 1 at offset 4");
  EXPECT_EQ(MustFail(P2("")), "pickle: STOP with 0 values on the stack instead of 1 at offset 2");
  EXPECT_EQ(MustFail(P2("(N")), "pickle: STOP with 1 MARKs still open at offset 4");
  EXPECT_EQ(MustFail(Bytes({0x80, 6, 'N', '.'})), "pickle: unknown pickle protocol 6 at offset 0");
  EXPECT_EQ(MustFail(P2("Ne")), "pickle: APPENDS without a MARK at offset 3");
  EXPECT_EQ(MustFail(P2("(Ne")), "pickle: APPENDS without a list below its MARK at offset 4");
  EXPECT_EQ(MustFail(P2("}Na")), "pickle: APPEND into a dict, not a list at offset 4");
  EXPECT_EQ(MustFail(P2("}(Nu")), "pickle: SETITEMS with a key that has no value at offset 5");
  EXPECT_EQ(MustFail(P2("]NNs")), "pickle: SETITEM into a list, not a dict at offset 5");
  EXPECT_EQ(MustFail(P2(Bytes({'}', 0x88, 'N', 's'}))),
            "pickle: dict key of type bool (only str and int) at offset 5");
  EXPECT_EQ(MustFail(P2(Bytes({'N', 0x86}))),
            "pickle: TUPLE2 needs 2 values on the stack at offset 3");
  EXPECT_EQ(MustFail(P2(Bytes({0x95, 100, 0, 0, 0, 0, 0, 0, 0, 'N'}))),
            "pickle: FRAME of 100 bytes, 2 left at offset 2");
  // Invalid UTF-8 (a lone continuation byte), an overlong '/', and a code point past U+10FFFF.
  EXPECT_EQ(MustFail(P2(Bytes({0x8c, 2, 'a', 0x80}))),
            "pickle: str is not UTF-8 (byte 1 of the string) at offset 2");
  EXPECT_NE(MustFail(P2(Bytes({0x8c, 2, 0xc0, 0xaf}))).find("not UTF-8"), std::string::npos);
  EXPECT_NE(MustFail(P2(Bytes({0x8c, 4, 0xf4, 0x90, 0x80, 0x80}))).find("not UTF-8"),
            std::string::npos);
  // Surrogates pass, as with Python's 'surrogatepass'.
  EXPECT_EQ(MustParse(P2(Bytes({0x8c, 3, 0xed, 0xa0, 0x80}))), PickleValue("\xed\xa0\x80"));
}

TEST(PickleReaderTest, LimitsBoundDepthValuesBytesAndInput) {
  PickleLimits limits;
  limits.max_depth = 8;
  // Eight nested lists fit, nine do not.
  auto nested = [](int depth) {
    std::string body;
    for (int i = 0; i < depth; ++i) body += "]";
    for (int i = 1; i < depth; ++i) body += "a";
    return P2(body);
  };
  std::string error;
  EXPECT_TRUE(ParsePickle(nested(8).data(), nested(8).size(), limits, &error)) << error;
  EXPECT_EQ(MustFail(nested(9), limits),
            "pickle: containers nested deeper than 8 (limit) at offset 18");
  EXPECT_EQ(MustFail(P2(std::string(9, '(')), limits),
            "pickle: more than 8 open MARKs (limit) at offset 10");

  // A memo bomb: each level is a tuple of the previous one twice; 40 levels expand to 2^40
  // values. Refused at the first level past the limit, long before memory runs out.
  std::string bomb = P2(Bytes({'N', 'q', 0}));
  bomb.pop_back();
  for (int i = 0; i < 40; ++i) bomb += Bytes({'h', 0, 'h', 0, 0x86, 'q', 0});
  bomb += Bytes({'h', 0, '.'});
  limits = PickleLimits{};
  error = MustFail(bomb, limits);
  EXPECT_NE(error.find("expands to more than 4194304 values"), std::string::npos) << error;

  // A million gets of one 100-byte string pass 64 MiB of strings.
  limits.max_string_bytes = 64 << 20;
  std::string strings =
      Bytes({0x80, 2, ']', 'X', 100, 0, 0, 0}) + std::string(100, 's') + Bytes({'q', 0, 'a'});
  for (int i = 0; i < 1000000; ++i) strings += Bytes({'h', 0, 'a'});
  strings += ".";
  error = MustFail(strings, limits);
  EXPECT_NE(error.find("bytes of strings (limit)"), std::string::npos) << error;

  // x = [1, 2]; (x, x) expands to 7 values (tuple, two lists, four ints), though only 4 were
  // made: the limit applies to the expanded tree.
  const std::string shared = P2(Bytes({']', 'q', 0, '(', 'K', 1, 'K', 2, 'e', 'h', 0, 0x86}));
  limits = PickleLimits{};
  limits.max_elements = 7;
  EXPECT_TRUE(ParsePickle(shared.data(), shared.size(), limits, &error)) << error;
  limits.max_elements = 6;
  EXPECT_EQ(MustFail(shared, limits),
            "pickle: a container expands to more than 6 values (limit; memo references count each "
            "time) at offset 13");

  limits = PickleLimits{};
  limits.max_elements = 1000;
  std::string many = P2(std::string(1001, 'N'));
  EXPECT_EQ(MustFail(many, limits), "pickle: more than 1000 values (limit) at offset 1002");

  limits.max_input_bytes = 3;
  EXPECT_EQ(MustFail(P2("N"), limits),
            "pickle: input of 4 bytes is larger than the limit of 3 at offset 0");
}

TEST(PickleReaderTest, NullErrorPointerIsAllowed) {
  const std::string bad = P2("h\x07");
  EXPECT_FALSE(ParsePickle(bad.data(), bad.size(), PickleLimits{}, nullptr).has_value());
}

}  // namespace
}  // namespace ncclscope::flight_recorder
