#include "plugin/core/warn.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "plugin/core/config.h"

namespace ncclscope::plugin {
namespace {

constexpr int kUnknown = -1;
std::atomic<int> g_enabled{kUnknown};
std::atomic<bool> g_warned[static_cast<int>(WarnKey::kCount)];

bool Enabled() {
  int e = g_enabled.load(std::memory_order_relaxed);
  if (e == kUnknown) {
    // A warning can precede configuration parsing (e.g. NCCL missing on a query call).
    bool on = true;
    if (const char* raw = std::getenv("NCCLSCOPE_WARN")) {
      if (!ParseBool(raw, &on)) on = true;
    }
    e = on ? 1 : 0;
  }
  return e == 1;
}

void VWarn(const char* format, va_list args) {
  const int saved_errno = errno;
  if (Enabled()) {
    char line[1024];
    int n = std::snprintf(line, sizeof line, "ncclscope: warning: ");
    const int m = std::vsnprintf(line + n, sizeof line - n - 1, format, args);
    n = m < 0 ? n : (n + m > static_cast<int>(sizeof line) - 2 ? sizeof line - 2 : n + m);
    line[n++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, n);
    (void)ignored;
  }
  errno = saved_errno;
}

}  // namespace

void Warn(const char* format, ...) {
  va_list args;
  va_start(args, format);
  VWarn(format, args);
  va_end(args);
}

void WarnOnce(WarnKey key, const char* format, ...) {
  if (g_warned[static_cast<int>(key)].exchange(true, std::memory_order_relaxed)) return;
  va_list args;
  va_start(args, format);
  VWarn(format, args);
  va_end(args);
}

void SetWarningsEnabled(bool enabled) {
  g_enabled.store(enabled ? 1 : 0, std::memory_order_relaxed);
}

void ResetWarnOnceAfterFork() {
  // NCCL stays missing in a child, so that warning is not repeated.
  for (int i = 0; i < static_cast<int>(WarnKey::kCount); ++i) {
    if (i != static_cast<int>(WarnKey::kNcclMissing)) g_warned[i].store(false);
  }
}

}  // namespace ncclscope::plugin
