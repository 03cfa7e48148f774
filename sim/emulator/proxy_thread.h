// The emulated NCCL's proxy progress thread, as far as a profiler plugin sees it. In NCCL 2.28.9
// the launching thread hands an operation's proxy work over right after the kernel launch
// (src/enqueue.cc ncclLaunchKernelAfter_NoCuda -> hostStreamPlanTask -> uploadProxyOps ->
// ncclProxySaveOp, then ncclProxyStart posts it), whatever the stream is still busy with; the
// proxy thread then appends it (src/proxy.cc ProxyAppend -> ncclProxyOpToArgs: ProxyOp start) and
// its first progress pass posts the steps (src/transport/net.cc). Here one thread per process
// plays that part for every communicator: it runs, in posting order, what the launching thread
// posts, so those events never come from the thread that called NCCL.
#pragma once

namespace ncclsim {

// Runs fn(arg) on the proxy thread after everything posted before it. fn must not block. Thread-
// safe; the thread is started on first use (again in a forked child, which has none).
void proxyPost(void (*fn)(void*), void* arg);

}  // namespace ncclsim
