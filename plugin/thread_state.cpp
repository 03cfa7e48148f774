#include "plugin/thread_state.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace ncclscope::plugin {
namespace {
thread_local ThreadState t_state;
}  // namespace

ThreadState& Tls() noexcept {
  return t_state;
}

uint32_t CachedTid() noexcept {
  ThreadState& ts = t_state;
  if (__builtin_expect(ts.tid == 0, 0)) ts.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return ts.tid;
}

void ResetThreadStateAfterFork() noexcept {
  // The child's only thread has a new id, and the parent's slots belong to the parent's ring.
  t_state.tid = 0;
  t_state.in_probe = 0;
  t_state.group_depth = 0;
  t_state.pending_count = 0;
  t_state.group_id = 0;
}

}  // namespace ncclscope::plugin
