#include "exporters/report/html.h"

namespace ncclscope::exporters::report {

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not one.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0 && c >= 0xC2) n = 2;
  if ((c & 0xF0) == 0xE0) n = 3;
  if ((c & 0xF8) == 0xF0 && c <= 0xF4) n = 4;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

std::string Html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default: {
        const size_t n = Utf8Length(text, i);
        const auto u = static_cast<unsigned char>(c);
        if (n == 0 || (n == 1 && u < 0x20 && c != '\n' && c != '\t')) {
          out += "\xEF\xBF\xBD";  // U+FFFD
          ++i;
          continue;
        }
        out.append(text.data() + i, n);
        i += n;
        continue;
      }
    }
    ++i;
  }
  return out;
}

std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows,
                  const std::vector<bool>& numeric) {
  auto cell = [&](const char* tag, size_t column, const std::string& text) {
    const bool right = column < numeric.size() && numeric[column];
    return std::string("<") + tag + (right ? " class=\"num\">" : ">") + Html(text) + "</" + tag +
           ">";
  };
  std::string out = "<table>";
  if (!header.empty()) {
    out += "<thead><tr>";
    for (size_t c = 0; c < header.size(); ++c) out += cell("th", c, header[c]);
    out += "</tr></thead>";
  }
  out += "<tbody>\n";
  for (const std::vector<std::string>& row : rows) {
    out += "<tr>";
    for (size_t c = 0; c < row.size(); ++c) out += cell("td", c, row[c]);
    out += "</tr>\n";
  }
  out += "</tbody></table>\n";
  return out;
}

}  // namespace ncclscope::exporters::report
