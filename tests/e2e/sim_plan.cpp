#include "tests/e2e/sim_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>

#include "tests/e2e/e2e_env.h"
#include "tests/e2e/subprocess.h"

namespace ncclscope::testing {
namespace {

using Json = nlohmann::json;

// A created reduction's number is a per-process handle, not part of what was called.
std::string Redop(const std::string& name) {
  return name.rfind("premulsum", 0) == 0 ? "premulsum" : name;
}

uint64_t Pack(int64_t high, int64_t low) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(high)) << 32) | static_cast<uint32_t>(low);
}

// The name of the child `split` made: the comm whose parent and split index the record names.
std::string ChildName(const RankDump& d, const Json& split) {
  for (const Json& c : d.comms) {
    if (c.at("parent_id") == split.at("comm_id") && c.at("split_index") == split.at("seq")) {
      return c.at("name");
    }
  }
  return "<no comm table entry>";
}

// Empty when the record is the call, else what differs.
std::string Difference(const RankDump& d, const Json& rec, const Json& call) {
  std::ostringstream why;
  auto check = [&](const char* what, const Json& recorded, const Json& planned) {
    if (recorded == planned) return;
    why << (why.tellp() > 0 ? "; " : "") << what << ": recorded " << recorded << ", planned "
        << planned;
  };
  check("op", rec.at("op"), call.at("op"));
  check("comm", rec.at("comm_name"), call.at("comm"));
  if (call.contains("count")) check("count", rec.at("count"), call.at("count"));
  if (call.contains("dtype")) check("dtype", rec.at("dtype"), call.at("dtype"));
  if (call.contains("redop")) check("redop", Redop(rec.at("redop")), call.at("redop"));
  if (call.contains("root")) check("root", rec.at("peer"), call.at("root"));
  if (call.contains("peer")) check("peer", rec.at("peer"), call.at("peer"));
  if (call.contains("new_comm")) {
    check("split child", ChildName(d, rec), call.at("new_comm"));
    check("split color/key", rec.at("aux"), Pack(call.at("color"), call.at("key")));
  }
  if (call.contains("nranks")) {
    check("init rank/nranks", rec.at("aux"), Pack(call.at("rank"), call.at("nranks")));
  }
  check("result", rec.at("result"), "success");
  return why.str();
}

}  // namespace

RankPlan LoadPlan(const std::string& scenario_path, int rank, int nranks) {
  RankPlan plan;
  const ProcessResult p = RunProcess({SimRank(), scenario_path, "--plan", "--rank",
                                      std::to_string(rank), "--nranks", std::to_string(nranks)},
                                     {}, 30);
  if (p.exit_code != 0) {
    ADD_FAILURE() << "plan of rank " << rank << " failed (exit " << p.exit_code << "): " << p.err;
    return plan;
  }
  std::istringstream in(p.out);
  for (std::string line; std::getline(in, line);) {
    Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      ADD_FAILURE() << "plan line is not JSON: " << line;
    } else if (j.at("type") == "stop") {
      plan.stop = j;
    } else {
      plan.calls.push_back(j);
    }
  }
  return plan;
}

void ExpectRecordsMatchPlan(const RankDump& dump, const std::vector<Json>& calls) {
  const int rank = dump.header.value("rank", -1);
  for (size_t i = 0; i < dump.records.size() && i < calls.size(); ++i) {
    const std::string why = Difference(dump, dump.records[i], calls[i]);
    if (!why.empty()) {
      ADD_FAILURE() << "rank " << rank << " record " << i << ": " << why
                    << "\n  record: " << dump.records[i].dump()
                    << "\n  plan:   " << calls[i].dump();
      return;
    }
  }
}

}  // namespace ncclscope::testing
