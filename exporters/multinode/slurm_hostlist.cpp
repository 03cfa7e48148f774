#include "exporters/multinode/slurm_hostlist.h"

#include <cctype>
#include <cstdint>
#include <utility>

namespace ncclscope::exporters {
namespace {

// A name's parts: literal text, or the numbers of one bracket (already formatted).
struct Part {
  std::string literal;
  std::vector<std::string> choices;  // empty: a literal
};

bool HostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_';
}

bool ShortDigitRun(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;  // 9 digits: no overflow, far beyond any node count
  for (const char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
  }
  return true;
}

std::string Padded(uint64_t v, size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// One bracket's content "001-004,010" into its numbers; `remaining` bounds how many may be made.
bool ExpandBracket(const std::string& body, size_t remaining, std::vector<std::string>* out,
                   std::string* why) {
  size_t start = 0;
  while (start <= body.size()) {
    const size_t comma = body.find(',', start);
    const std::string entry =
        body.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t dash = entry.find('-');
    const std::string lo_text = entry.substr(0, dash);
    const std::string hi_text = dash == std::string::npos ? lo_text : entry.substr(dash + 1);
    if (!ShortDigitRun(lo_text) || !ShortDigitRun(hi_text)) {
      *why = "'" + entry + "' is not a number or a range a-b of numbers (at most 9 digits)";
      return false;
    }
    const uint64_t lo = std::stoull(lo_text);
    const uint64_t hi = std::stoull(hi_text);
    if (hi < lo) {
      *why = "range '" + entry + "' goes backwards";
      return false;
    }
    if (hi - lo + 1 > remaining - out->size()) {
      *why = "more than " + std::to_string(kMaxHostlistHosts) + " hosts";
      return false;
    }
    for (uint64_t v = lo; v <= hi; ++v) out->push_back(Padded(v, lo_text.size()));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

bool ParseName(const std::string& name, size_t budget, std::vector<Part>* parts, std::string* why) {
  size_t i = 0;
  while (i < name.size()) {
    if (name[i] == '[') {
      const size_t close = name.find(']', i);
      Part p;
      if (!ExpandBracket(name.substr(i + 1, close - i - 1), budget, &p.choices, why)) return false;
      parts->push_back(std::move(p));
      i = close + 1;
      continue;
    }
    if (!HostChar(name[i])) {
      *why = std::string("character '") + name[i] + "' cannot be in a host name";
      return false;
    }
    if (parts->empty() || !parts->back().choices.empty()) parts->emplace_back();
    parts->back().literal += name[i++];
  }
  return true;
}

// The names of one comma-separated item, brackets multiplied out left to right.
bool ExpandName(const std::string& name, size_t budget, std::vector<std::string>* out,
                std::string* why) {
  std::vector<Part> parts;
  if (!ParseName(name, budget, &parts, why)) return false;
  std::vector<std::string> names = {""};
  for (const Part& p : parts) {
    if (p.choices.empty()) {
      for (std::string& n : names) n += p.literal;
      continue;
    }
    if (names.size() > budget / p.choices.size()) {
      *why = "more than " + std::to_string(kMaxHostlistHosts) + " hosts";
      return false;
    }
    std::vector<std::string> next;
    next.reserve(names.size() * p.choices.size());
    for (const std::string& n : names) {
      for (const std::string& c : p.choices) next.push_back(n + c);
    }
    names = std::move(next);
  }
  for (std::string& n : names) out->push_back(std::move(n));
  return true;
}

}  // namespace

bool ExpandHostlist(const std::string& list, std::vector<std::string>* out, std::string* error) {
  std::vector<std::string> hosts;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') {
      if (++depth > 1) {
        *error = "'" + list + "': nested '[' at position " + std::to_string(i + 1);
        return false;
      }
    } else if (c == ']') {
      if (--depth < 0) {
        *error = "'" + list + "': ']' without '[' at position " + std::to_string(i + 1);
        return false;
      }
    } else if (c == ',' && depth == 0) {
      const std::string name = list.substr(start, i - start);
      if (name.empty()) {
        *error = "'" + list + "': empty host name at position " + std::to_string(start + 1);
        return false;
      }
      std::string why;
      if (!ExpandName(name, kMaxHostlistHosts - hosts.size(), &hosts, &why)) {
        *error = "'" + list + "': in '" + name + "': " + why;
        return false;
      }
      start = i + 1;
    }
  }
  if (depth != 0) {
    *error = "'" + list + "': '[' without ']'";
    return false;
  }
  out->insert(out->end(), hosts.begin(), hosts.end());
  return true;
}

}  // namespace ncclscope::exporters
