#include "plugin/core/detached_thread.h"

#include <pthread.h>
#include <signal.h>

namespace ncclscope::plugin {

int StartDetachedThread(void* (*fn)(void*), void* arg, const char* name) noexcept {
  // A new thread inherits the creator's mask: block everything around the creation only.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  const int rc = pthread_create(&thread, &attr, fn, arg);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc == 0) pthread_setname_np(thread, name);
  return rc;
}

}  // namespace ncclscope::plugin
