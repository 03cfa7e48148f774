#include "plugin/core/presence.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <memory>

#include "plugin/core/proc_environ.h"
#include "plugin/core/warn.h"
#include "trace/ring_writer.h"

namespace ncclscope::plugin {
namespace {

// Set once at load; taken (exchanged for null) by whoever ends it: the first NCCL call, the exit
// or a fork's child. The writer of a retired or exited file is freed (its flags are in the shared
// mapping, so the file keeps them); the one a child takes is left alone (it is the parent's).
std::atomic<trace::RingWriter*> g_presence{nullptr};

// A launcher's environment is a few kilobytes; a block past this is not read (the process then
// counts as having no rank for a parent).
constexpr size_t kMaxParentEnviron = size_t{4} << 20;

void ExitHandler() {
  MarkPresenceExited();
}

void ForkChildHandler() {
  ForgetPresenceAfterFork();
}

std::optional<LaunchRank> ParentRank(const std::function<bool(std::string*)>& parent_environ) {
  std::string bytes;
  if (!parent_environ(&bytes)) return std::nullopt;
  const std::map<std::string, std::string> vars = ParseEnviron(bytes);
  const EnvLookup lookup = [&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  std::vector<std::string> ignored;  // the parent's malformed values are not this process's
  return ReadLaunchRank(lookup, &ignored);
}

}  // namespace

bool StandsForItsRank(const LaunchRank& self, const std::optional<LaunchRank>& parent) {
  if (self.global_rank < 0 || self.world_size <= 0) return false;
  return !parent.has_value() || !(*parent == self);
}

void WritePresence(const EnvLookup& env,
                   const std::function<bool(std::string* bytes)>& parent_environ) noexcept {
  const int saved_errno = errno;
  try {
    // Every process of a job under LD_PRELOAD loads the library (shells, `ls`, the launcher):
    // most have no rank, and cost no more than these few getenv calls.
    std::vector<std::string> warnings;
    const LaunchRank self = ReadLaunchRank(env, &warnings);
    if (!StandsForItsRank(self, std::nullopt)) {
      errno = saved_errno;
      return;
    }
    const Config config = ParseConfig(env, &warnings);
    if (!config.enable || !config.presence || !StandsForItsRank(self, ParentRank(parent_environ))) {
      errno = saved_errno;
      return;
    }
    const LaunchIdentity identity = ReadLaunchIdentity(env, config, &warnings);
    SetWarningsEnabled(config.warn);
    trace::RingOptions options;
    options.presence = true;
    SetRingIdentity(identity, &options);
    std::string error;
    std::unique_ptr<trace::RingWriter> ring;
    if (MakeTraceDir(env, config, identity, &options.dir, &error)) {
      ring = trace::RingWriter::Create(options, &error);
    }
    if (ring == nullptr) {
      // The ring file's key: its creation at the first NCCL call fails the same way, and one line
      // says it.
      WarnOnce(WarnKey::kRingCreate,
               "cannot write the presence file of rank %d: %s; its ring file will most likely "
               "fail the same way at the first NCCL call (recording disabled then)",
               identity.global_rank, error.c_str());
      errno = saved_errno;
      return;
    }
    g_presence.store(ring.release(), std::memory_order_release);
    // Handlers of their own rather than InstallProcessHooks: the runtime's exit handler must
    // still be registered at the first NCCL call, after the CUDA runtime's, so that it runs
    // before the CUDA runtime tears down.
    static std::atomic<bool> handlers{false};
    if (!handlers.exchange(true)) {
      pthread_atfork(nullptr, nullptr, ForkChildHandler);
      std::atexit(ExitHandler);
    }
  } catch (...) {
    // Nothing half-made outlives the exception: the process simply has no presence file.
  }
  errno = saved_errno;
}

bool ReadParentEnviron(std::string* bytes) {
  std::string error;  // unreadable: the parent is no rank (a launcher of root's, another user's)
  return ReadProcEnviron(static_cast<int>(getppid()), kMaxParentEnviron, bytes, &error);
}

std::string PresencePath() {
  const trace::RingWriter* ring = g_presence.load(std::memory_order_acquire);
  return ring != nullptr ? ring->path() : std::string();
}

void RetirePresence() noexcept {
  std::unique_ptr<trace::RingWriter> ring(g_presence.exchange(nullptr, std::memory_order_acq_rel));
  if (ring == nullptr) return;
  const int saved_errno = errno;
  unlink(ring->path().c_str());
  errno = saved_errno;
}

void MarkPresenceExited() noexcept {
  const std::unique_ptr<trace::RingWriter> ring(
      g_presence.exchange(nullptr, std::memory_order_acq_rel));
  if (ring != nullptr) ring->SetFlags(trace::kHeaderFinished);
}

void ForgetPresenceAfterFork() noexcept {
  g_presence.store(nullptr, std::memory_order_relaxed);
}

}  // namespace ncclscope::plugin
