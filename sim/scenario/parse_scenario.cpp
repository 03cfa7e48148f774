// Top level of the scenario format: metadata, communicators, steps, compute. Ops and faults have
// their own files.
#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>

#include "sim/scenario/scenario_parser.h"

namespace ncclscope::sim {
namespace {

constexpr int64_t kMaxRanks = 1 << 20;
constexpr double kMaxMs = 3600.0 * 1000.0;

CommSpec parseComm(const JsonNode& node, const std::set<std::string>& known) {
  node.expectObject({"name", "parent", "split", "key"});
  CommSpec c;
  c.name = node.at("name").asString();
  if (c.name.empty()) node.at("name").fail("must not be empty");
  if (known.count(c.name)) node.at("name").fail(fmt::format("'{}' is already defined", c.name));
  if (node.has("parent")) {
    c.parent = node.at("parent").asString();
    if (!known.count(c.parent)) {
      node.at("parent").fail(
          fmt::format("unknown communicator '{}' (parents must be defined earlier)", c.parent));
    }
  } else {
    c.parent = "world";
  }
  const JsonNode split = node.at("split");
  split.expectObject({"by", "size", "stride"});
  const std::string by = split.at("by").asString();
  if (by == "block") {
    c.by = SplitBy::kBlock;
    if (split.has("stride")) split.at("stride").fail("'stride' belongs to by=stride; use 'size'");
    c.group = static_cast<int>(split.at("size").asInt(1, kMaxRanks));
  } else if (by == "stride") {
    c.by = SplitBy::kStride;
    if (split.has("size")) split.at("size").fail("'size' belongs to by=block; use 'stride'");
    c.group = static_cast<int>(split.at("stride").asInt(1, kMaxRanks));
  } else {
    split.at("by").fail(fmt::format("unknown split '{}' (expected block or stride)", by));
  }
  if (node.has("key")) {
    const std::string key = node.at("key").asString();
    if (key == "parent_rank") {
      c.key = SplitKey::kParentRank;
    } else if (key == "reverse") {
      c.key = SplitKey::kReverse;
    } else {
      node.at("key").fail(fmt::format("unknown key '{}' (expected parent_rank or reverse)", key));
    }
  }
  return c;
}

StepSpec parseStep(const JsonNode& node) {
  node.expectObject({"name", "compute", "ops"});
  StepSpec s;
  if (node.has("name")) s.name = node.at("name").asString();
  if (node.has("compute")) s.compute = parseCompute(node.at("compute"));
  const JsonNode ops = node.at("ops");
  for (size_t i = 0; i < ops.arraySize(); ++i) s.ops.push_back(parseOp(ops.at(i)));
  return s;
}

int parseRankKey(const JsonNode& map_node, const std::string& key) {
  size_t used = 0;
  int rank = 0;
  try {
    rank = std::stoi(key, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != key.size()) {
    throw ScenarioError(map_node.file(), map_node.path() + "." + key,
                        "key must be a rank number (negative counts from the end)");
  }
  return rank;
}

}  // namespace

ComputeSpec parseCompute(const JsonNode& node) {
  node.expectObject({"ms", "per_rank", "jitter_ms"});
  ComputeSpec c;
  if (node.has("ms")) c.ms = node.at("ms").asNumber(0, kMaxMs);
  if (node.has("jitter_ms")) c.jitter_ms = node.at("jitter_ms").asNumber(0, kMaxMs);
  if (node.has("per_rank")) {
    const JsonNode map = node.at("per_rank");
    for (const std::string& key : map.keys()) {
      c.per_rank[parseRankKey(map, key)] = map.at(key).asNumber(0, kMaxMs);
    }
  }
  return c;
}

Scenario parseScenarioText(std::string_view text, const std::string& file) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::exception& e) {  // syntax, and numbers beyond int64 or double
    throw ScenarioError(file, "", fmt::format("not valid JSON: {}", e.what()));
  }
  const JsonNode root(doc, "", file);
  root.expectObject({"name", "description", "seed", "min_ranks", "repeat", "compute",
                     "communicators", "steps", "faults", "accel"});
  Scenario s;
  s.file = file;
  if (root.has("name")) s.name = root.at("name").asString();
  if (root.has("description")) s.description = root.at("description").asString();
  if (root.has("seed")) s.seed = static_cast<uint64_t>(root.at("seed").asInt(0, INT64_MAX));
  if (root.has("min_ranks"))
    s.min_ranks = static_cast<int>(root.at("min_ranks").asInt(1, kMaxRanks));
  if (root.has("repeat")) s.repeat = static_cast<int>(root.at("repeat").asInt(1, 1000000));
  if (root.has("compute")) s.compute = parseCompute(root.at("compute"));
  if (root.has("accel")) s.accel = parseAccel(root.at("accel"));

  std::set<std::string> known{"world"};
  if (root.has("communicators")) {
    const JsonNode comms = root.at("communicators");
    for (size_t i = 0; i < comms.arraySize(); ++i) {
      s.comms.push_back(parseComm(comms.at(i), known));
      known.insert(s.comms.back().name);
    }
  }
  const JsonNode steps = root.at("steps");
  if (steps.arraySize() == 0) steps.fail("needs at least one step");
  for (size_t i = 0; i < steps.arraySize(); ++i) s.steps.push_back(parseStep(steps.at(i)));
  if (root.has("faults")) {
    const JsonNode faults = root.at("faults");
    for (size_t i = 0; i < faults.arraySize(); ++i) s.faults.push_back(parseFault(faults.at(i)));
  }
  checkReferences(s);
  return s;
}

Scenario parseScenarioFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ScenarioError(path, "", "cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  return parseScenarioText(text.str(), path);
}

}  // namespace ncclscope::sim
