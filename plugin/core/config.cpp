#include "plugin/core/config.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "trace/size_text.h"

namespace ncclscope::plugin {
namespace {

// Variable names are derived from field names so the two can never disagree.
std::string VarName(const char* field) {
  std::string name = "NCCLSCOPE_";
  for (const char* p = field; *p; ++p) name += static_cast<char>(std::toupper(*p));
  return name;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// "min..max" -> bounds; an empty constraint allows the whole type.
template <typename T>
void Bounds(const char* constraint, T* lo, T* hi) {
  const char* dots = std::strstr(constraint, "..");
  if (dots == nullptr) return;
  if constexpr (std::is_signed_v<T>) {
    *lo = std::strtoll(constraint, nullptr, 10);
    *hi = std::strtoll(dots + 2, nullptr, 10);
  } else {
    *lo = std::strtoull(constraint, nullptr, 10);
    *hi = std::strtoull(dots + 2, nullptr, 10);
  }
}

bool ParseInto(const char* text, const char* constraint, bool* out) {
  return ParseBool(text, out);
}
bool ParseInto(const char* text, const char* constraint, int64_t* out) {
  return ParseInt(text, constraint, out);
}
bool ParseInto(const char* text, const char* constraint, uint64_t* out) {
  return ParseSize(text, constraint, out);
}
bool ParseInto(const char* text, ConfigKind kind, const char* constraint, std::string* out) {
  if (kind == ConfigKind::Enum && !ParseEnum(text, constraint)) return false;
  *out = text;
  return true;
}

template <typename T>
bool ParseValue(const char* text, ConfigKind kind, const char* constraint, T* out) {
  if constexpr (std::is_same_v<T, std::string>) {
    return ParseInto(text, kind, constraint, out);
  } else {
    return ParseInto(text, constraint, out);
  }
}

std::string Describe(ConfigKind kind, const char* constraint) {
  std::string what = ConfigKindName(kind);
  if (*constraint) what += std::string(" in ") + constraint;
  return what;
}

// A '|' inside a Markdown table cell ends the cell unless escaped.
std::string EscapePipes(const char* text) {
  std::string out;
  for (const char* p = text; *p; ++p) {
    if (*p == '|') out += '\\';
    out += *p;
  }
  return out;
}

}  // namespace

const char* ConfigKindName(ConfigKind kind) {
  switch (kind) {
    case ConfigKind::Bool:
      return "bool";
    case ConfigKind::Int:
      return "int";
    case ConfigKind::Size:
      return "size";
    case ConfigKind::String:
      return "string";
    case ConfigKind::Enum:
      return "enum";
  }
  return "?";
}

bool ParseBool(const char* text, bool* out) {
  static constexpr const char* kTrue[] = {"1", "true", "yes", "on"};
  static constexpr const char* kFalse[] = {"0", "false", "no", "off"};
  for (const char* t : kTrue) {
    if (EqualsIgnoreCase(text, t)) return *out = true, true;
  }
  for (const char* f : kFalse) {
    if (EqualsIgnoreCase(text, f)) return *out = false, true;
  }
  return false;
}

bool ParseInt(const char* text, const char* constraint, int64_t* out) {
  if (*text == '\0' || std::isspace(static_cast<unsigned char>(*text))) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  Bounds(constraint, &lo, &hi);
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool ParseSize(const char* text, const char* constraint, uint64_t* out) {
  uint64_t v = 0;  // digits, then an optional binary suffix k, m or g (trace/size_text.h)
  if (!trace::ParseSizeText(text, &v)) return false;
  uint64_t lo = 0, hi = UINT64_MAX;
  Bounds(constraint, &lo, &hi);
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool ParseEnum(const char* text, const char* constraint) {
  std::string_view rest(constraint);
  while (!rest.empty()) {
    const size_t bar = rest.find('|');
    if (rest.substr(0, bar) == text) return true;
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return false;
}

const std::vector<ConfigVarInfo>& ConfigVars() {
  static const std::vector<std::string> names = {
#define NCCLSCOPE_CONFIG_NAME(field, kind, def, constraint, doc) VarName(#field),
      NCCLSCOPE_CONFIG_TABLE(NCCLSCOPE_CONFIG_NAME)
#undef NCCLSCOPE_CONFIG_NAME
  };
  static const std::vector<ConfigVarInfo> vars = [] {
    std::vector<ConfigVarInfo> v;
    size_t i = 0;
#define NCCLSCOPE_CONFIG_INFO(field, kind, def, constraint, doc) \
  v.push_back({names[i++].c_str(), ConfigKind::kind, def, constraint, doc});
    NCCLSCOPE_CONFIG_TABLE(NCCLSCOPE_CONFIG_INFO)
#undef NCCLSCOPE_CONFIG_INFO
    return v;
  }();
  return vars;
}

Config ParseConfig(const EnvLookup& env, std::vector<std::string>* warnings) {
  Config config;
// The X-macro pastes field and kind into member and enumerator names: they cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define NCCLSCOPE_CONFIG_PARSE(field, kind, def, constraint, doc)                              \
  {                                                                                            \
    const std::string name = VarName(#field);                                                  \
    const char* raw = env(name.c_str());                                                       \
    if (raw == nullptr || !ParseValue(raw, ConfigKind::kind, constraint, &config.field)) {     \
      if (raw != nullptr) {                                                                    \
        warnings->push_back(name + "='" + raw + "' is not a valid " +                          \
                            Describe(ConfigKind::kind, constraint) + "; using the default '" + \
                            def + "'");                                                        \
      }                                                                                        \
      ParseValue(def, ConfigKind::kind, constraint, &config.field);                            \
    }                                                                                          \
  }
  NCCLSCOPE_CONFIG_TABLE(NCCLSCOPE_CONFIG_PARSE)
#undef NCCLSCOPE_CONFIG_PARSE
  // NOLINTEND(bugprone-macro-parentheses)
  return config;
}

std::string RenderConfigMarkdown() {
  std::string md =
      "# Configuration\n\n"
      "<!-- Generated from plugin/core/config_table.h by build/bin/ncclscope_config_doc; "
      "do not edit. -->\n\n"
      "`libncclscope.so` reads these environment variables once, at the first recorded NCCL call.\n"
      "A value that does not parse prints one warning naming the variable, and the default is "
      "used.\n"
      "Booleans accept 1/0, true/false, yes/no, on/off; sizes accept a k, m or g suffix "
      "(binary).\n\n"
      "| Variable | Type | Default | Allowed | Description |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const ConfigVarInfo& v : ConfigVars()) {
    md += std::string("| `") + v.name + "` | " + ConfigKindName(v.kind) + " | " +
          (*v.default_text ? std::string("`") + v.default_text + "`" : std::string("(empty)")) +
          " | " + (*v.constraint ? "`" + EscapePipes(v.constraint) + "`" : std::string()) + " | " +
          v.doc + " |\n";
  }
  return md;
}

}  // namespace ncclscope::plugin
