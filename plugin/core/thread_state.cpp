#include "plugin/core/thread_state.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace ncclscope::plugin {
__thread ThreadState t_thread_state;

uint32_t CacheTidSlow(ThreadState& ts) noexcept {
  ts.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return ts.tid;
}

void ResetThreadStateAfterFork() noexcept {
  // The child's only thread has a new id, and the parent's slots belong to the parent's ring.
  t_thread_state.tid = 0;
  t_thread_state.in_probe = 0;
  t_thread_state.group_depth = 0;
  t_thread_state.pending_count = 0;
  t_thread_state.group_id = 0;
  t_thread_state.call_op = 0;
  t_thread_state.call_peer = -1;
  t_thread_state.held_comm = nullptr;
  t_thread_state.numerics_deferred_count = 0;
}

}  // namespace ncclscope::plugin
