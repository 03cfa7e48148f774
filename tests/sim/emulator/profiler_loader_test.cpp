// Which profiler plugin the emulated NCCL loads for each NCCL_PROFILER_PLUGIN value, as NCCL
// 2.28.9 does (src/plugin/profiler.cc ncclProfilerPluginLoad, src/plugin/plugin_open.cc
// openPluginLib and tryOpenLib). The modules lie in a directory on LD_LIBRARY_PATH (set by
// CMake): libnccl-profiler.so, libnccl-profiler-simrec.so, libnccl-profiler-libsimx.so.so (a
// fallback name NCCL never forms) and libnccl-profiler-v3only.so (only ncclProfiler_v3).
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <nccl.h>

#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/profiler_recorder.h"
#include "tests/sim/emulator/profiler_test_support.h"

extern "C" __attribute__((visibility("default"))) void simrecModuleInit(const char* module) {
  simrec::Event e;
  e.kind = simrec::Event::kInit;
  e.table = module;
  simrec::add(e);
}

namespace {

// The table names whose init ran when a communicator was created with `value` (null: unset).
void expectLoaded(const char* value, const std::string& want) {
  ncclsim_test::inChild([value, want] {
    if (value == nullptr) {
      unsetenv("NCCL_PROFILER_PLUGIN");
    } else {
      setenv("NCCL_PROFILER_PLUGIN", value, 1);
    }
    ncclComm_t comms[2];
    CHILD_CHECK(ncclCommInitAll(comms, 2, nullptr) == ncclSuccess);
    std::string got;
    for (const simrec::Event& e : simrec::events()) {
      if (e.kind == simrec::Event::kInit) got += (got.empty() ? "" : ",") + e.table;
    }
    if (got != want) {
      ncclsim_test::rankReport("NCCL_PROFILER_PLUGIN=%s: loaded '%s', want '%s'",
                               value != nullptr ? value : "(unset)", got.c_str(), want.c_str());
      return 1;
    }
    return 0;
  });
}

TEST(ProfilerLoader, UnsetTriesLibncclProfilerSo) {
  expectLoaded(nullptr, "module-default,module-default");
  expectLoaded("", "module-default,module-default");  // empty is unset (openPluginLib)
}

TEST(ProfilerLoader, NoneInAnyCaseLoadsNothing) {
  expectLoaded("none", "");
  expectLoaded("NoNe", "");
}

TEST(ProfilerLoader, BareNameFallsBackToLibncclProfilerDashName) {
  expectLoaded("simrec", "module-simrec,module-simrec");
  expectLoaded("libnccl-profiler-simrec.so", "module-simrec,module-simrec");
}

// A value that has a '/' or is "lib*.so" is tried as given only.
TEST(ProfilerLoader, PathsAndLibraryNamesGetNoFallback) {
  expectLoaded("libsimx.so", "");
  expectLoaded("./simrec", "");
  expectLoaded(SIMREC_MODULE_DIR "/libnccl-profiler-simrec.so", "module-simrec,module-simrec");
}

// tryOpenLib: any case-insensitive prefix of STATIC_PLUGIN opens the executable itself.
TEST(ProfilerLoader, AnyPrefixOfStaticPluginMeansTheExecutable) {
  for (const char* v : {"STATIC_PLUGIN", "static_plugin", "s", "Stat", "STATIC_"}) {
    expectLoaded(v, "exe-v5,exe-v5");
  }
  expectLoaded("STATIC_PLUGINS", "");  // longer than STATIC_PLUGIN: a (missing) library name
}

// NCCL 2.28.9 would run a v3..v1 table through its adapters; the emulator finds it and says it
// is not emulated (one warning), and emits nothing.
TEST(ProfilerLoader, OlderTablesAreFoundButNotEmulated) {
  expectLoaded("v3only", "");
}

}  // namespace
