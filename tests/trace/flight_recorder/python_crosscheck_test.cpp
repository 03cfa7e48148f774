// Cross-checks with CPython's own pickle module, when python3 is on PATH: what CPython writes
// (protocols 2 to 4, equal dicts and lists shared as torch shares frame dicts) parses into the
// expected tree, and what PickleWriter writes loads in CPython as the expected dict.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <limits>

#include "tests/trace/flight_recorder/fr_sample_dumps.h"
#include "tests/trace/flight_recorder/pickle_bytes.h"
#include "tests/trace/temp_dir.h"
#include "trace/flight_recorder/pickle_writer.h"

namespace ncclscope::flight_recorder {
namespace {

using testing::ReadFile;

bool HavePython() {
  return std::system("command -v python3 >/dev/null 2>&1") == 0;
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

// A dump next to a tree of every kind and edge value (no bytes: protocol 2 has no opcode for them).
PickleValue Expected() {
  PickleDict kinds;
  kinds.items.emplace_back(int64_t{-3}, PickleValue::None());
  kinds.items.emplace_back(
      std::string("ints"),
      PickleList{{0, 255, 256, 65535, 65536, -1, -129, std::numeric_limits<int32_t>::min(),
                  int64_t{std::numeric_limits<int32_t>::max()} + 1,
                  std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}});
  kinds.items.emplace_back(std::string("floats"), PickleList{{0.1, -2.5e-300, 1e300, 3.0}});
  kinds.items.emplace_back(std::string("text"),
                           PickleList{{"", "caf\xc3\xa9 \xe2\x9c\x93", "quote ' and \\", "\x01\n",
                                       std::string(300, 'x')}});
  kinds.items.emplace_back(std::string("tuples"),
                           PickleList{{PickleTuple{}, PickleTuple{{1}}, PickleTuple{{1, 2}},
                                       PickleTuple{{1, 2, 3}}, PickleTuple{{1, 2, 3, 4}}}});
  kinds.items.emplace_back(std::string("empty"), PickleTuple{{PickleList{}, PickleDict{}}});
  kinds.items.emplace_back(std::string("bools"), PickleList{{true, false}});
  // More than 1000 items: CPython writes APPENDS and SETITEMS in batches of 1000.
  PickleList many;
  for (int i = 0; i < 2500; ++i) many.items.emplace_back(i % 7);
  kinds.items.emplace_back(std::string("many"), many);
  PickleDict top;
  top.items.emplace_back(std::string("dump"), testing::SampleDumpTree("2.10"));
  top.items.emplace_back(std::string("kinds"), kinds);
  return top;
}

constexpr const char* kScript = R"PY(
import pickle, sys
out = sys.argv[1]
expected = eval(open(out + "/expected.txt", encoding="utf-8").read())

def share(v, seen):
    # One object for equal dicts and lists, so CPython writes memo gets (BINGET) for repeats.
    if isinstance(v, dict):
        v = {k: share(x, seen) for k, x in v.items()}
    elif isinstance(v, list):
        v = [share(x, seen) for x in v]
    elif isinstance(v, tuple):
        v = tuple(share(x, seen) for x in v)
    else:
        return v
    return seen.setdefault(repr(v), v)

shared = share(expected, {})
for proto in (2, 3, 4):
    with open("%s/cpython%d.pkl" % (out, proto), "wb") as f:
        f.write(pickle.dumps(shared, protocol=proto))
for proto in (2, 4):
    with open("%s/bytes%d.pkl" % (out, proto), "wb") as f:
        f.write(pickle.dumps({"blob": b"\x00\x01", "s": "x"}, protocol=proto))
# repr tells 1 from 1.0 and True, and a tuple from a list, where == does not.
with open(out + "/ours.pkl", "rb") as f:
    ours = pickle.load(f)
print("ours-equal" if repr(ours) == repr(expected) else "ours-differ:\n%r\n%r" % (ours, expected))
with open(out + "/ours_bytes.pkl", "rb") as f:
    print("bytes-equal" if pickle.load(f) == {"blob": b"\x00\x01", "s": "x"} else "bytes-differ")
)PY";

TEST(PythonCrossCheckTest, CPythonAndPickleWriterAgreeWithTheReader) {
  if (!HavePython()) GTEST_SKIP() << "python3 is not on PATH; the cross-check needs CPython";
  ncclscope::testing::TempDir dir;
  const PickleValue expected = Expected();
  WriteFile(dir.path() + "/expected.txt", DescribePickleValue(expected));
  WriteFile(dir.path() + "/ours.pkl", WritePickle(expected));
  PickleDict with_bytes;
  with_bytes.items.emplace_back(std::string("blob"), PickleBytes{testing::Bytes({0, 1})});
  with_bytes.items.emplace_back(std::string("s"), "x");
  WriteFile(dir.path() + "/ours_bytes.pkl", WritePickle(with_bytes));
  WriteFile(dir.path() + "/check.py", kScript);
  const std::string command =
      "python3 " + dir.path() + "/check.py " + dir.path() + " > " + dir.path() + "/out.txt 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << ReadFile(dir.path() + "/out.txt");

  // PickleWriter -> CPython.
  EXPECT_EQ(ReadFile(dir.path() + "/out.txt"), "ours-equal\nbytes-equal\n");

  // CPython -> ParsePickle.
  for (int proto : {2, 3, 4}) {
    const std::string bytes = ReadFile(dir.path() + "/cpython" + std::to_string(proto) + ".pkl");
    std::string error;
    auto got = testing::Parse(bytes, &error);
    ASSERT_TRUE(got.has_value()) << "protocol " << proto << ": " << error;
    EXPECT_EQ(*got, expected) << "protocol " << proto;
  }
  std::string error;
  auto got = testing::Parse(ReadFile(dir.path() + "/bytes4.pkl"), &error);
  ASSERT_TRUE(got.has_value()) << error;
  EXPECT_EQ(*got, PickleValue(with_bytes));
  // Protocol 2 has no bytes opcode: CPython writes a call of _codecs.encode, which is refused.
  got = testing::Parse(ReadFile(dir.path() + "/bytes2.pkl"), &error);
  EXPECT_FALSE(got.has_value());
  EXPECT_NE(error.find("unsupported opcode GLOBAL (0x63)"), std::string::npos) << error;
}

}  // namespace
}  // namespace ncclscope::flight_recorder
