// A small streaming JSON writer (objects, arrays, strings, numbers, booleans) into a std::string.
// It exists so the in-process watchdog can write verdict.json without a JSON library (design rule
// 3); the CLI uses the same writer so both produce the same document. Not thread-safe (one writer
// per document).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ncclscope::hang_detector {

class JsonWriter {
 public:
  // indent > 0 pretty-prints with that many spaces per level; 0 writes one line.
  explicit JsonWriter(int indent = 2) : indent_(indent) {}

  // Inside an object every value is preceded by Key(). Unbalanced calls are the caller's bug.
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& UInt(uint64_t value);
  JsonWriter& Double(double value);  // non-finite values are written as null (JSON has no NaN)
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  JsonWriter& IntArray(const std::vector<int>& values);
  JsonWriter& StringArray(const std::vector<std::string>& values);

  const std::string& str() const { return out_; }

 private:
  void BeforeValue();
  void Open(char bracket);
  void Close(char bracket);
  void NewLine();

  struct Level {
    bool first = true;
  };
  std::string out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
  int indent_;
};

// value as a JSON string literal, quotes included: escapes '"', '\\' and control characters, and
// replaces bytes that are not valid UTF-8 with U+FFFD, so any file name or record text is safe.
// Thread-safe (pure).
std::string JsonQuote(std::string_view value);

}  // namespace ncclscope::hang_detector
