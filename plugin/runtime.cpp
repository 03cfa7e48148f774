#include "plugin/runtime/runtime.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>

#include "plugin/core/launch_env.h"
#include "plugin/core/nccl_symbols.h"
#include "plugin/core/presence.h"
#include "plugin/core/warn.h"
#include "plugin/numerics/numerics_probe.h"
#include "plugin/watchdog/watchdog.h"
#include "trace/clock.h"
#include "trace/ring_layout.h"

namespace ncclscope::plugin {

std::atomic<Runtime*> g_runtime{nullptr};

std::mutex& InitMutex() {
  static std::mutex mutex;
  return mutex;
}

namespace {

const char* GetEnv(const char* name) {
  return std::getenv(name);
}

// posix_fallocate beyond RLIMIT_FSIZE raises SIGXFSZ, which kills a process that has not ignored
// it: refuse up front instead of hurting the host.
bool FitsFileSizeLimit(const Config& c, std::string* error) {
  rlimit lim{};
  if (getrlimit(RLIMIT_FSIZE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return true;
  uint64_t records = 64;
  while (records < c.ring_records) records <<= 1;
  const uint64_t need = trace::kHeaderBytes + static_cast<uint64_t>(c.comm_capacity) * 136 + 4096 +
                        records * sizeof(trace::RecordSlot);
  if (need <= lim.rlim_cur) return true;
  *error = "the ring file needs " + std::to_string(need) + " bytes but RLIMIT_FSIZE is " +
           std::to_string(static_cast<uint64_t>(lim.rlim_cur));
  return false;
}

uint32_t NcclVersion() {
  int version = 0;
  auto get_version = NCCLSCOPE_REAL(GetVersion);
  if (get_version == nullptr || get_version(&version) != ncclSuccess) return 0;
  return static_cast<uint32_t>(version);
}

Runtime* CreateRuntime(bool from_profiler) {
  std::vector<std::string> warnings;
  const EnvLookup env = GetEnv;
  Config config = ParseConfig(env, &warnings);
  SetWarningsEnabled(config.warn);
  for (const std::string& w : warnings) Warn("%s", w.c_str());
  if (!config.enable) return nullptr;

  warnings.clear();
  const LaunchIdentity identity = ReadLaunchIdentity(env, config, &warnings);
  for (const std::string& w : warnings) Warn("%s", w.c_str());

  trace::RingOptions options;
  std::string error;
  if (!MakeTraceDir(env, config, identity, &options.dir, &error)) {
    WarnOnce(WarnKey::kRingCreate, "cannot create the trace directory %s: %s; recording disabled",
             TraceDir(env, config, identity).c_str(), error.c_str());
    return nullptr;
  }
  options.record_capacity = config.ring_records;
  options.comm_capacity = static_cast<uint32_t>(config.comm_capacity);
  SetRingIdentity(identity, &options);
  options.nccl_version = from_profiler ? 0 : NcclVersion();

  std::unique_ptr<trace::RingWriter> ring;
  if (FitsFileSizeLimit(config, &error)) ring = trace::RingWriter::Create(options, &error);
  if (ring == nullptr) {
    WarnOnce(WarnKey::kRingCreate, "cannot create the trace ring in %s: %s; recording disabled",
             options.dir.c_str(), error.c_str());
    return nullptr;
  }

  auto rt = std::make_unique<Runtime>();
  rt->config = std::move(config);
  rt->ring = std::move(ring);
  rt->created_by_profiler = from_profiler;
  rt->process_nonce =
      static_cast<uint64_t>(getpid()) << 32 ^ static_cast<uint64_t>(trace::RealtimeNs());
  if (rt->config.track_completion) {
    const std::string library = rt->config.cuda_library;
    rt->tracker = std::make_unique<CompletionTracker>(
        rt->ring.get(), static_cast<uint32_t>(rt->config.event_pool),
        [library](cuda::Driver* driver, std::string* err) {
          return LoadCompletionDriver(library, driver, err);
        });
  }
  rt->watchdog = MakeWatchdog(rt.get());
  warnings.clear();
  NumericsSettings numerics =
      ParseNumericsSettings(rt->config.numerics, rt->config.numerics_every, rt->config.numerics_ops,
                            rt->config.numerics_comms, &warnings);
  for (const std::string& w : warnings) Warn("%s", w.c_str());
  if (numerics.enabled()) {
    rt->numerics = std::make_unique<NumericsProbe>(rt->ring.get(), std::move(numerics),
                                                   rt->config.cuda_library);
  }
  InstallProcessHooks();
  // Without the poller no completion would ever be stamped: drop tracking, keep recording.
  if (!StartBackgroundThread(rt.get())) rt->tracker.reset();
  return rt.release();
}

}  // namespace

namespace {

Runtime* InitRuntime(bool from_profiler) noexcept {
  const int saved_errno = errno;
  Runtime* result = nullptr;
  try {
    std::lock_guard<std::mutex> lock(InitMutex());
    Runtime* rt = g_runtime.load(std::memory_order_acquire);
    if (rt == nullptr) {
      rt = CreateRuntime(from_profiler);
      g_runtime.store(rt != nullptr ? rt : kRuntimeOff, std::memory_order_release);
      // This process has called NCCL: its presence must not say otherwise, whether or not a
      // ring file now stands for it.
      RetirePresence();
    }
    result = rt == kRuntimeOff ? nullptr : rt;
  } catch (...) {
    g_runtime.store(kRuntimeOff, std::memory_order_release);
    RetirePresence();
    WarnOnce(WarnKey::kInit, "initialization failed; recording disabled");
  }
  errno = saved_errno;
  return result;
}

}  // namespace

Runtime* InitRuntimeSlow() noexcept {
  return InitRuntime(false);
}

Runtime* InitRuntimeFromProfiler() noexcept {
  return InitRuntime(true);
}

}  // namespace ncclscope::plugin
