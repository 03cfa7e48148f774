#include "trace/flight_recorder/pickle_value.h"

#include <cstdio>

namespace ncclscope::flight_recorder {

namespace {

// Python literal quoting; bytes literals must be ASCII, str literals keep UTF-8 as is.
void AppendQuoted(std::string_view text, bool escape_non_ascii, std::string* out) {
  out->push_back('\'');
  for (unsigned char c : text) {
    if (c == '\'' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c < 0x20 || c == 0x7f || (escape_non_ascii && c >= 0x80)) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out->append(buf);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  out->push_back('\'');
}

void AppendItems(const std::vector<PickleValue>& items, std::string* out);

void Append(const PickleValue& v, std::string* out) {
  switch (v.kind()) {
    case PickleValue::Kind::kNone:
      out->append("None");
      break;
    case PickleValue::Kind::kBool:
      out->append(*v.AsBool() ? "True" : "False");
      break;
    case PickleValue::Kind::kInt:
      out->append(std::to_string(*v.AsInt()));
      break;
    case PickleValue::Kind::kFloat: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.17g", *v.AsFloat());
      out->append(buf);
      // "3" would read back as an int.
      if (std::string_view(buf).find_first_of(".eni") == std::string_view::npos) out->append(".0");
      break;
    }
    case PickleValue::Kind::kStr:
      AppendQuoted(*v.AsStr(), false, out);
      break;
    case PickleValue::Kind::kBytes:
      out->push_back('b');
      AppendQuoted(v.AsBytes()->data, true, out);
      break;
    case PickleValue::Kind::kList:
      out->push_back('[');
      AppendItems(v.AsList()->items, out);
      out->push_back(']');
      break;
    case PickleValue::Kind::kTuple:
      out->push_back('(');
      AppendItems(v.AsTuple()->items, out);
      if (v.AsTuple()->items.size() == 1) out->push_back(',');
      out->push_back(')');
      break;
    case PickleValue::Kind::kDict: {
      out->push_back('{');
      bool first = true;
      for (const auto& [key, value] : v.AsDict()->items) {
        if (!first) out->append(", ");
        first = false;
        if (const auto* s = std::get_if<std::string>(&key)) {
          AppendQuoted(*s, false, out);
        } else {
          out->append(std::to_string(std::get<int64_t>(key)));
        }
        out->append(": ");
        Append(value, out);
      }
      out->push_back('}');
      break;
    }
  }
}

void AppendItems(const std::vector<PickleValue>& items, std::string* out) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out->append(", ");
    Append(items[i], out);
  }
}

}  // namespace

const PickleValue* PickleDict::Find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (const auto* s = std::get_if<std::string>(&k); s != nullptr && *s == key) return &v;
  }
  return nullptr;
}

const char* PickleKindName(PickleValue::Kind kind) {
  switch (kind) {
    case PickleValue::Kind::kNone:
      return "NoneType";
    case PickleValue::Kind::kBool:
      return "bool";
    case PickleValue::Kind::kInt:
      return "int";
    case PickleValue::Kind::kFloat:
      return "float";
    case PickleValue::Kind::kStr:
      return "str";
    case PickleValue::Kind::kBytes:
      return "bytes";
    case PickleValue::Kind::kList:
      return "list";
    case PickleValue::Kind::kTuple:
      return "tuple";
    case PickleValue::Kind::kDict:
      return "dict";
  }
  return "?";
}

std::string DescribePickleValue(const PickleValue& value) {
  std::string out;
  Append(value, &out);
  return out;
}

}  // namespace ncclscope::flight_recorder
