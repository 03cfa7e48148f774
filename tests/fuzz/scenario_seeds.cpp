// Seeds for the scenario fuzz target: every shipped scenario, and variants of each with one value
// replaced by a boundary or a wrong type (numbers) or an empty or unknown name (strings), so the
// byte mutations start from documents that get past the JSON parser into the checks.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Span {
  size_t begin, end;  // [begin, end) of the token, quotes included for strings
  bool number;
};

// Values (numbers, and strings after a ':') outside of keys, in document order.
std::vector<Span> Values(const std::string& text) {
  std::vector<Span> out;
  char last = 0;  // last structural character outside strings
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      size_t j = i + 1;
      while (j < text.size() && text[j] != '"') j += text[j] == '\\' ? 2 : 1;
      if (last == ':' || last == '[') out.push_back({i, std::min(j + 1, text.size()), false});
      i = j;
      last = '"';
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      size_t j = i + 1;
      while (j < text.size() &&
             std::string_view("0123456789.eE+-").find(text[j]) != std::string_view::npos) {
        ++j;
      }
      out.push_back({i, j, true});
      i = j - 1;
      last = '0';
    } else if (c == ':' || c == '[' || c == ',' || c == '{') {
      last = c == ',' ? ':' : c;  // an array's later elements are values too
    }
  }
  return out;
}

}  // namespace

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  static const char* const kNumbers[] = {"0",     "-1",  "2147483648", "-9223372036854775809",
                                         "1e308", "0.5", "\"7\"",      "null"};
  static const char* const kStrings[] = {"\"\"", "\"nosuch\"", "\"world\"", "3"};
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(NCCLSCOPE_SCENARIO_DIR)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> texts;
  for (const auto& path : files) {
    std::ifstream in(path);
    texts.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // The accel key with every member, both spellings of the buffer (no shipped scenario has them
  // all).
  texts.emplace_back(R"({"accel": {"enabled": false, "buffer": "64k", "timeout_ms": 100},)"
                     R"( "steps": [{"ops": [{"op": "allreduce", "count": 8}]}]})");
  texts.emplace_back(R"({"accel": {"buffer": 1073741824, "timeout_ms": 3600000},)"
                     R"( "steps": [{"ops": [{"op": "alltoall", "count": 4}]}],)"
                     R"( "faults": [{"kind": "ipc_open_fails", "ranks": [-1, 0]},)"
                     R"( {"kind": "device_memory_limit", "ranks": [1], "bytes": 65536}]})");
  for (const std::string& text : texts) {
    seeds->push_back(text);
    for (const Span& v : Values(text)) {
      const auto replace = [&](const char* with) {
        seeds->push_back(text.substr(0, v.begin) + with + text.substr(v.end));
      };
      if (v.number) {
        for (const char* n : kNumbers) replace(n);
      } else {
        for (const char* s : kStrings) replace(s);
      }
    }
  }
}
