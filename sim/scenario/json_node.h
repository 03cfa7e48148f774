// A JSON value that knows where it sits in its file, so every validation error can name the file,
// the JSON path (steps[3].ops[1].dtype) and what is wrong.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ncclscope::sim {

// Thrown by the scenario parser and checks; what() is "FILE: PATH: MESSAGE".
class ScenarioError : public std::runtime_error {
 public:
  ScenarioError(const std::string& file, const std::string& path, const std::string& message);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A view on one JSON value; borrows the document and the file name (both outlive it).
// Not thread-safe; cheap to copy.
class JsonNode {
 public:
  JsonNode(const nlohmann::json& value, std::string path, const std::string& file);

  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  [[noreturn]] void fail(const std::string& message) const;

  // Requires an object whose keys are all in `allowed` or "comment" (a typo is an error, not a
  // silent default).
  void expectObject(std::initializer_list<std::string_view> allowed) const;
  bool has(std::string_view key) const;
  std::vector<std::string> keys() const;    // requires an object; in document order of the parser
  JsonNode at(std::string_view key) const;  // fails naming the missing key
  size_t arraySize() const;                 // requires an array
  JsonNode at(size_t index) const;

  bool isString() const;
  std::string asString() const;
  bool asBool() const;
  int64_t asInt(int64_t min, int64_t max) const;
  double asNumber(double min, double max) const;

 private:
  const nlohmann::json* value_;
  std::string path_;
  const std::string* file_;
};

}  // namespace ncclscope::sim
