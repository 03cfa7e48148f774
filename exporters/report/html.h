// Building a self-contained HTML page: text and attribute escaping, and a few elements the report
// repeats. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ncclscope::exporters::report {

// Text for an HTML element or a quoted attribute: & < > " ' escaped; bytes that are not valid
// UTF-8 replaced by U+FFFD, so a hostile communicator or host name cannot break the page.
std::string Html(std::string_view text);

// <table> with a header row (none when `header` is empty) and one row per entry; every cell
// escaped. `numeric` columns are right-aligned.
std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows,
                  const std::vector<bool>& numeric = {});

}  // namespace ncclscope::exporters::report
