#include "sim/scenario/json_node.h"

#include <fmt/format.h>

namespace ncclscope::sim {

ScenarioError::ScenarioError(const std::string& file, const std::string& path,
                             const std::string& message)
    : std::runtime_error(path.empty() ? fmt::format("{}: {}", file, message)
                                      : fmt::format("{}: {}: {}", file, path, message)),
      path_(path) {}

JsonNode::JsonNode(const nlohmann::json& value, std::string path, const std::string& file)
    : value_(&value), path_(std::move(path)), file_(&file) {}

void JsonNode::fail(const std::string& message) const {
  throw ScenarioError(*file_, path_, message);
}

void JsonNode::expectObject(std::initializer_list<std::string_view> allowed) const {
  if (!value_->is_object()) fail(fmt::format("expected an object, got {}", value_->type_name()));
  for (const auto& [key, unused] : value_->items()) {
    bool known = key == "comment";  // free text is welcome anywhere
    for (std::string_view a : allowed) known = known || a == key;
    if (!known) {
      std::string list;
      for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      at(key).fail(fmt::format("unknown key (allowed here: {})", list));
    }
  }
}

bool JsonNode::has(std::string_view key) const {
  return value_->is_object() && value_->contains(key);
}

std::vector<std::string> JsonNode::keys() const {
  if (!value_->is_object()) fail(fmt::format("expected an object, got {}", value_->type_name()));
  std::vector<std::string> out;
  for (const auto& [key, unused] : value_->items()) out.push_back(key);
  return out;
}

JsonNode JsonNode::at(std::string_view key) const {
  std::string child = path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  if (!has(key)) throw ScenarioError(*file_, child, "required key is missing");
  return JsonNode(value_->find(key).value(), std::move(child), *file_);
}

size_t JsonNode::arraySize() const {
  if (!value_->is_array()) fail(fmt::format("expected an array, got {}", value_->type_name()));
  return value_->size();
}

JsonNode JsonNode::at(size_t index) const {
  return JsonNode((*value_)[index], fmt::format("{}[{}]", path_, index), *file_);
}

bool JsonNode::isString() const {
  return value_->is_string();
}

std::string JsonNode::asString() const {
  if (!value_->is_string()) fail(fmt::format("expected a string, got {}", value_->type_name()));
  return value_->get<std::string>();
}

bool JsonNode::asBool() const {
  if (!value_->is_boolean())
    fail(fmt::format("expected true or false, got {}", value_->type_name()));
  return value_->get<bool>();
}

int64_t JsonNode::asInt(int64_t min, int64_t max) const {
  if (!value_->is_number_integer()) {
    fail(fmt::format("expected an integer, got {}", value_->dump()));
  }
  // Unsigned values beyond int64 range are rejected by the range check after this cast.
  const int64_t v = value_->is_number_unsigned() && value_->get<uint64_t>() > INT64_MAX
                        ? INT64_MAX
                        : value_->get<int64_t>();
  if (v < min || v > max)
    fail(fmt::format("{} is out of range [{}, {}]", value_->dump(), min, max));
  return v;
}

double JsonNode::asNumber(double min, double max) const {
  if (!value_->is_number()) fail(fmt::format("expected a number, got {}", value_->dump()));
  const double v = value_->get<double>();
  if (!(v >= min && v <= max)) fail(fmt::format("{} is out of range [{}, {}]", v, min, max));
  return v;
}

}  // namespace ncclscope::sim
