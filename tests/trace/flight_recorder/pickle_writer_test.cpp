// The pickle writer: torch's byte layout (torch/csrc/jit/serialization/pickler.cpp) and round
// trips through the reader.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "tests/trace/flight_recorder/pickle_bytes.h"
#include "trace/flight_recorder/pickle_writer.h"

namespace ncclscope::flight_recorder {
namespace {

using testing::Bytes;

TEST(PickleWriterTest, WritesTorchsLayout) {
  // {'a': [1, 'a'], 'b': (True, None)}: PROTO 2; dict and list filled between MARK and
  // SETITEMS/APPENDS; every new string BINPUT, a repeated one BINGET (Pickler::pushString).
  PickleDict d;
  d.items.emplace_back(std::string("a"), PickleList{{1, "a"}});
  d.items.emplace_back(std::string("b"), PickleTuple{{true, PickleValue::None()}});
  EXPECT_EQ(WritePickle(d),
            Bytes({0x80, 2, '}', '(', 'X', 1, 0, 0, 0,   'a', 'q', 0,    ']', '(',  'K', 1,
                   'h',  0, 'e', 'X', 1,   0, 0, 0, 'b', 'q', 1,   0x88, 'N', 0x86, 'u', '.'}));
}

TEST(PickleWriterTest, ASharedDictIsWrittenOnceAndMemoizedAfterItIsFilled) {
  // Pickler::pushIValue: a container held by more than one reference is pushed, then BINPUT;
  // every later reference is a BINGET. An equal dict that is not shared is written again.
  PickleDict shared;
  shared.items.emplace_back(std::string("a"), 1);
  shared.shared = true;
  PickleDict plain = shared;
  plain.shared = false;
  EXPECT_EQ(WritePickle(PickleList{{shared, shared, plain}}),
            Bytes({0x80, 2,   ']', '(', '}', '(', 'X', 1,   0,   0, 0,   'a', 'q', 0,   'K',
                   1,    'u', 'q', 1,   'h', 1,   '}', '(', 'h', 0, 'K', 1,   'u', 'e', '.'}));
}

TEST(PickleWriterTest, IntsTakeTheSmallestOfTorchsFourForms) {
  // Pickler::pushInt: BININT1 for 0..255, BININT2 for ..65535, BININT for int32, else LONG1 of 8.
  EXPECT_EQ(WritePickle(255), Bytes({0x80, 2, 'K', 255, '.'}));
  EXPECT_EQ(WritePickle(300), Bytes({0x80, 2, 'M', 0x2c, 0x01, '.'}));
  EXPECT_EQ(WritePickle(-5), Bytes({0x80, 2, 'J', 0xfb, 0xff, 0xff, 0xff, '.'}));
  EXPECT_EQ(WritePickle(int64_t{1} << 40), Bytes({0x80, 2, 0x8a, 8, 0, 0, 0, 0, 0, 1, 0, 0, '.'}));
  EXPECT_EQ(WritePickle(1.5), Bytes({0x80, 2, 'G', 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, '.'}));
  EXPECT_EQ(WritePickle(PickleTuple{}), Bytes({0x80, 2, ')', '.'}));
  EXPECT_EQ(WritePickle(PickleTuple{{1, 2, 3, 4}}),
            Bytes({0x80, 2, '(', 'K', 1, 'K', 2, 'K', 3, 'K', 4, 't', '.'}));
}

TEST(PickleWriterTest, MemoIdsPast255UseTheLongForms) {
  PickleList list;
  for (int i = 0; i < 300; ++i) list.items.emplace_back("s" + std::to_string(i));
  list.items.emplace_back("s299");
  const std::string bytes = WritePickle(list);
  // The 257th string is stored with LONG_BINPUT 256 and its repeat read with LONG_BINGET 299.
  EXPECT_NE(bytes.find(Bytes({'X', 4, 0, 0, 0, 's', '2', '5', '6', 'r', 0, 1, 0, 0})),
            std::string::npos);
  EXPECT_EQ(bytes.substr(bytes.size() - 7), Bytes({'j', 0x2b, 0x01, 0, 0, 'e', '.'}));
  std::string error;
  auto back = testing::Parse(bytes, &error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(*back, PickleValue(list));
}

TEST(PickleWriterTest, EveryKindRoundTrips) {
  PickleDict d;
  d.items.emplace_back(std::string("none"), PickleValue::None());
  d.items.emplace_back(int64_t{-7}, false);
  d.items.emplace_back(
      std::string("ints"),
      PickleList{{0, 255, 256, 65535, 65536, -1, std::numeric_limits<int32_t>::max(),
                  std::numeric_limits<int32_t>::min(),
                  int64_t{std::numeric_limits<int32_t>::max()} + 1,
                  std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}});
  d.items.emplace_back(
      std::string("floats"),
      PickleList{{0.0, -0.0, 1e300, -2.5, std::numeric_limits<double>::infinity()}});
  d.items.emplace_back(std::string("text"), PickleList{{"", "caf\xc3\xa9", std::string(300, 'x')}});
  d.items.emplace_back(std::string("bytes"),
                       PickleList{{PickleBytes{""}, PickleBytes{std::string(1000, '\0')}}});
  d.items.emplace_back(std::string("tuples"),
                       PickleList{{PickleTuple{{1}}, PickleTuple{{1, "a"}},
                                   PickleTuple{{PickleList{}, PickleDict{}, PickleTuple{}}}}});
  std::string error;
  auto back = testing::Parse(WritePickle(d), &error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(*back, PickleValue(d)) << DescribePickleValue(*back);
}

}  // namespace
}  // namespace ncclscope::flight_recorder
