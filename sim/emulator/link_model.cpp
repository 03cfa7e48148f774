#include "sim/emulator/link_model.h"

#include <atomic>
#include <cmath>
#include <mutex>

#include "sim/emulator/env_config.h"
#include "sim/emulator/ncclsim_control.h"

namespace ncclsim {

namespace {

std::once_flag g_once;
std::atomic<double> g_latency_ns{20000.0};
std::atomic<double> g_ns_per_byte{0.1};
std::atomic<double> g_slowdown{1.0};
std::atomic<bool> g_hung{false};

}  // namespace

void initLinkModel() {
  std::call_once(g_once, [] {
    g_latency_ns = envDouble("NCCLSIM_LATENCY_US", 20.0, 0.0, 1e9) * 1000.0;
    g_ns_per_byte = 1.0 / envDouble("NCCLSIM_BANDWIDTH_GBPS", 10.0, 1e-6, 1e6);
    g_slowdown = envDouble("NCCLSIM_LINK_SLOWDOWN", 1.0, 1e-3, 1e6);
  });
}

LinkTiming currentLinkTiming() {
  initLinkModel();
  return LinkTiming{g_latency_ns.load(), g_ns_per_byte.load(), g_slowdown.load()};
}

bool linkHung() {
  return g_hung.load(std::memory_order_relaxed);
}

}  // namespace ncclsim

extern "C" void ncclsimSetLinkHung(int hung) {
  ncclsim::g_hung.store(hung != 0, std::memory_order_relaxed);
}

extern "C" void ncclsimSetLinkSlowdown(double factor) {
  ncclsim::initLinkModel();
  if (!std::isfinite(factor) || factor <= 0) {
    ncclsim::warnOnce("ncclsimSetLinkSlowdown",
                      "ncclsimSetLinkSlowdown: ignoring factor " + std::to_string(factor));
    return;
  }
  ncclsim::g_slowdown = factor;
}
