// Written dump files: names, modes, the bytes read back by our reader and by CPython's pickle (as
// torch's analyzer loads them), the JSON form, and the keys each version has.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/hang_detector/job_builder.h"
#include "tests/trace/temp_dir.h"
#include "trace/flight_recorder/fr_json.h"
#include "trace/flight_recorder/fr_write.h"
#include "trace/flight_recorder/pickle_reader.h"

namespace ncclscope::exporters::fr {
namespace {

using testing::Done;
using testing::JobBuilder;
using trace::OpType;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int Mode(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 0777);
}

FrJobDumps TwoRankDumps(const std::string& version = "2.10") {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kCompleted);
    job.Coll(r, world, OpType::kAllGather, 2.0, Done::kPending);
  }
  job.Send(0, world, 1, 3.0, Done::kCompleted);
  job.Recv(1, world, 0, 3.0, Done::kCompleted);
  trace::TraceSet set = job.Build();
  std::vector<const trace::RingSnapshot*> files;
  for (auto& f : set.files) {
    f.nccl_version = 22809;
    files.push_back(&f);
  }
  FrExportOptions o;
  o.version = version;
  return DumpsOfJob(files, o);
}

TEST(FrWriteTest, FilesAreNamedByRankPrivateAndReadBackAsTheSameDump) {
  ncclscope::testing::TempDir tmp;
  const std::string dir = tmp.path() + "/fr/out";
  const FrJobDumps dumps = TwoRankDumps();
  std::vector<std::string> written;
  std::string error;
  ASSERT_TRUE(WriteFrDumps(dumps.ranks, dir, kDefaultFrPrefix, FrFormat::kPickle, &written, &error))
      << error;
  ASSERT_EQ(written,
            (std::vector<std::string>{dir + "/nccl_trace_rank_0", dir + "/nccl_trace_rank_1"}));
  EXPECT_EQ(Mode(dir), 0700);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(Mode(written[r]), 0600);
    const std::string bytes = ReadFile(written[r]);
    auto tree = flight_recorder::ParsePickle(bytes.data(), bytes.size(), {}, &error);
    ASSERT_TRUE(tree.has_value()) << error;
    auto back = flight_recorder::DecodeFrDump(*tree, &error);
    ASSERT_TRUE(back.has_value()) << error;
    EXPECT_EQ(*back, dumps.ranks[r].dump);
  }
  // Written again: replaced, no temporary file left behind.
  written.clear();
  ASSERT_TRUE(WriteFrDumps(dumps.ranks, dir, kDefaultFrPrefix, FrFormat::kPickle, &written, &error))
      << error;
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 2u);
}

TEST(FrWriteTest, JsonDumpsDecodeToTheSameEntries) {
  ncclscope::testing::TempDir tmp;
  const FrJobDumps dumps = TwoRankDumps();
  std::vector<std::string> written;
  std::string error;
  ASSERT_TRUE(WriteFrDumps(dumps.ranks, tmp.path(), "trace_", FrFormat::kJson, &written, &error))
      << error;
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[1], tmp.path() + "/trace_1");
  auto tree = flight_recorder::ParseFrJson(ReadFile(written[0]), &error);
  ASSERT_TRUE(tree.has_value()) << error;
  auto back = flight_recorder::DecodeFrDump(*tree, &error);
  ASSERT_TRUE(back.has_value()) << error;
  const auto& want = dumps.ranks[0].dump;
  ASSERT_EQ(back->entries.size(), want.entries.size());
  for (size_t i = 0; i < want.entries.size(); ++i) {
    EXPECT_EQ(back->entries[i].profiling_name, want.entries[i].profiling_name);
    EXPECT_EQ(back->entries[i].state, want.entries[i].state);
    EXPECT_EQ(back->entries[i].collective_seq_id, want.entries[i].collective_seq_id);
  }
  EXPECT_EQ(back->pg_config, want.pg_config);
  EXPECT_EQ(back->comm_lib_version, "2.28.9");
}

TEST(FrWriteTest, BadPrefixesAndUnwritableDirectoriesAreRefusedWithTheReason) {
  ncclscope::testing::TempDir tmp;
  const FrJobDumps dumps = TwoRankDumps();
  std::vector<std::string> written;
  std::string error;
  EXPECT_FALSE(WriteFrDumps(dumps.ranks, tmp.path(), "a/b", FrFormat::kPickle, &written, &error));
  EXPECT_NE(error.find("'a/b'"), std::string::npos) << error;
  EXPECT_FALSE(IsValidFrPrefix(""));
  EXPECT_FALSE(IsValidFrPrefix(".."));
  std::ofstream(tmp.path() + "/file") << "x";
  EXPECT_FALSE(
      WriteFrDumps(dumps.ranks, tmp.path() + "/file", "p", FrFormat::kPickle, &written, &error));
  EXPECT_NE(error.find(tmp.path() + "/file"), std::string::npos) << error;
  EXPECT_TRUE(written.empty());
}

// The keys each version has, as torch's dumper writes them: input_dtypes, output_dtypes,
// timeout_ms and is_p2p in every version (2.2's NCCLTraceBuffer::getCollectiveTrace in
// c10d/NCCLUtils.hpp writes them), pg_status from 2.3, the NCCL version from 2.7
// (FlightRecorder.hpp dump_dict), the thread from 2.10.
TEST(FrWriteTest, EachVersionHasItsKeys) {
  struct Want {
    const char* version;
    bool pg_status;   // 2.3 on
    bool nccl_key;    // "nccl_version" in 2.7 ...
    bool comm_lib;    // ... "comm_lib_version" from 2.10
    bool thread_key;  // 2.10 on
  };
  for (const Want& w :
       {Want{"2.2", false, false, false, false}, Want{"2.4", true, false, false, false},
        Want{"2.7", true, true, false, false}, Want{"2.10", true, false, true, true}}) {
    const FrJobDumps dumps = TwoRankDumps(w.version);
    const std::string bytes = EncodeFrFile(dumps.ranks[0].dump, FrFormat::kPickle);
    std::string error;
    auto tree = flight_recorder::ParsePickle(bytes.data(), bytes.size(), {}, &error);
    ASSERT_TRUE(tree.has_value()) << error;
    const auto* top = tree->AsDict();
    ASSERT_NE(top, nullptr);
    EXPECT_EQ(*top->Find("version")->AsStr(), w.version);
    EXPECT_EQ(top->Find("nccl_version") != nullptr, w.nccl_key) << w.version;
    EXPECT_EQ(top->Find("comm_lib_version") != nullptr, w.comm_lib) << w.version;
    EXPECT_EQ(top->Find("pg_status") != nullptr, w.pg_status) << w.version;
    const auto* entries = top->Find("entries")->AsList();
    ASSERT_NE(entries, nullptr);
    ASSERT_FALSE(entries->items.empty());
    const auto* entry = entries->items[0].AsDict();
    for (const char* key : {"input_dtypes", "output_dtypes", "timeout_ms", "is_p2p"}) {
      EXPECT_NE(entry->Find(key), nullptr) << w.version << " " << key;
    }
    EXPECT_EQ(entry->Find("thread_name") != nullptr, w.thread_key) << w.version;
    EXPECT_NE(entry->Find("profiling_name"), nullptr);
  }
}

bool HavePython() {
  return std::system("command -v python3 >/dev/null 2>&1") == 0;
}

// torch's analyzer loads each file with pickle.load (torch/distributed/flight_recorder/components/
// loader.py, read_dump).
TEST(FrWriteTest, CPythonsPickleLoadsTheDumps) {
  if (!HavePython()) GTEST_SKIP() << "python3 is not on PATH; the cross-check needs CPython";
  ncclscope::testing::TempDir tmp;
  const FrJobDumps dumps = TwoRankDumps();
  std::vector<std::string> written;
  std::string error;
  ASSERT_TRUE(
      WriteFrDumps(dumps.ranks, tmp.path(), kDefaultFrPrefix, FrFormat::kPickle, &written, &error))
      << error;
  const std::string script = tmp.path() + "/load.py";
  std::ofstream(script) << "import pickle, sys\n"
                           "for p in sys.argv[1:]:\n"
                           "    d = pickle.load(open(p, 'rb'))\n"
                           "    e = d['entries']\n"
                           "    print(d['version'], len(e), e[0]['profiling_name'],\n"
                           "          e[0]['process_group'], d['pg_config']['0']['ranks'])\n";
  const std::string out = tmp.path() + "/out.txt";
  const std::string command =
      "python3 " + script + " " + written[0] + " " + written[1] + " > " + out + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << ReadFile(out);
  EXPECT_EQ(ReadFile(out),
            "2.10 3 nccl:all_reduce ('0', 'world') [0, 1]\n"
            "2.10 3 nccl:all_reduce ('0', 'world') [0, 1]\n");
}

}  // namespace
}  // namespace ncclscope::exporters::fr
