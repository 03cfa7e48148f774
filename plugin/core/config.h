// Typed configuration parsed from the NCCLSCOPE_* environment (see config_table.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "plugin/core/config_table.h"

namespace ncclscope::plugin {

enum class ConfigKind { Bool, Int, Size, String, Enum };

template <ConfigKind K>
struct ConfigValueType;
template <>
struct ConfigValueType<ConfigKind::Bool> {
  using type = bool;
};
template <>
struct ConfigValueType<ConfigKind::Int> {
  using type = int64_t;
};
template <>
struct ConfigValueType<ConfigKind::Size> {
  using type = uint64_t;
};
template <>
struct ConfigValueType<ConfigKind::String> {
  using type = std::string;
};
template <>
struct ConfigValueType<ConfigKind::Enum> {
  using type = std::string;
};

struct Config {
#define NCCLSCOPE_CONFIG_FIELD(field, kind, def, constraint, doc) \
  ConfigValueType<ConfigKind::kind>::type field{};
  NCCLSCOPE_CONFIG_TABLE(NCCLSCOPE_CONFIG_FIELD)
#undef NCCLSCOPE_CONFIG_FIELD
};

// One row of the table in plain form, for rendering and tests.
struct ConfigVarInfo {
  const char* name;  // full variable name, "NCCLSCOPE_ENABLE"
  ConfigKind kind;
  const char* default_text;
  const char* constraint;
  const char* doc;
};

// The table rows in declaration order. Thread-safe; the storage is static.
const std::vector<ConfigVarInfo>& ConfigVars();

using EnvLookup = std::function<const char*(const char*)>;

// Parses every variable through env (getenv in production). A value that does not parse or is out
// of range adds one line to *warnings naming the variable and the value, and the default is used.
// Thread-safe (no shared state).
Config ParseConfig(const EnvLookup& env, std::vector<std::string>* warnings);

// Parses one value of the given kind/constraint into out (of the matching type). Returns false on
// an invalid value. Exposed for tests. Thread-safe.
bool ParseBool(const char* text, bool* out);
bool ParseInt(const char* text, const char* constraint, int64_t* out);
bool ParseSize(const char* text, const char* constraint, uint64_t* out);
bool ParseEnum(const char* text, const char* constraint);

// The table as a Markdown page (docs/config.md). Thread-safe.
std::string RenderConfigMarkdown();

const char* ConfigKindName(ConfigKind kind);

}  // namespace ncclscope::plugin
