// Prints docs/config.md: the configuration table rendered as Markdown.
#include <cstdio>

#include "plugin/core/config.h"

int main() {
  const std::string md = ncclscope::plugin::RenderConfigMarkdown();
  return std::fwrite(md.data(), 1, md.size(), stdout) == md.size() ? 0 : 1;
}
