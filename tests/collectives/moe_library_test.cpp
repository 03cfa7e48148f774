// libncclscope_moe.so, the MoE C API's shared library (collectives/moe/moe_library.cpp): a
// framework that links it finds every function of include/ncclscope/moe.h and the host twins the
// emulated driver runs, and nothing else of ncclscope's (its internals must not clash with the host
// program's symbols).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "collectives/include/ncclscope/moe.h"

namespace {

std::vector<std::string> DefinedDynamicSymbols(const std::string& library) {
  std::vector<std::string> names;
  FILE* nm = popen(("nm -D --defined-only '" + library + "'").c_str(), "r");
  if (nm == nullptr) return names;
  char line[512];
  while (std::fgets(line, sizeof(line), nm) != nullptr) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    const size_t space = s.rfind(' ');
    names.push_back(space == std::string::npos ? s : s.substr(space + 1));
  }
  pclose(nm);
  return names;
}

TEST(MoeLibrary, ExportsTheApiAndTheHostTwinsOnly) {
  const std::vector<std::string> names = DefinedDynamicSymbols(NCCLSCOPE_MOE_LIBRARY);
  ASSERT_FALSE(names.empty()) << "nm read nothing from " << NCCLSCOPE_MOE_LIBRARY;
  for (const std::string& name : names) {
    EXPECT_EQ(name.rfind("ncclscope_moe_", 0), 0u) << "exported: " << name;
  }
  void* lib = dlopen(NCCLSCOPE_MOE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  for (const char* api :
       {"ncclscope_moe_plan_make", "ncclscope_moe_result_string", "ncclscope_moe_fatbin",
        "ncclscope_moe_dispatch_on_cpu", "ncclscope_moe_combine_on_cpu",
        "ncclscope_moe_dispatch_host", "ncclscope_moe_dispatch_host_param_bytes",
        "ncclscope_moe_combine_host", "ncclscope_moe_combine_host_param_bytes"}) {
    EXPECT_NE(dlsym(lib, api), nullptr) << api;
  }
  const auto* dispatch_bytes =
      static_cast<const unsigned long*>(dlsym(lib, "ncclscope_moe_dispatch_host_param_bytes"));
  ASSERT_NE(dispatch_bytes, nullptr);
  EXPECT_EQ(*dispatch_bytes, sizeof(ncclscope_moe_dispatch_args));
  // The API answers through the library as through the static one.
  using ResultString = const char* (*)(int32_t);
  auto result_string = reinterpret_cast<ResultString>(dlsym(lib, "ncclscope_moe_result_string"));
  ASSERT_NE(result_string, nullptr);
  EXPECT_STREQ(result_string(NCCLSCOPE_MOE_TIMEOUT),
               ncclscope_moe_result_string(NCCLSCOPE_MOE_TIMEOUT));
  using Fatbin = const void* (*)(size_t*);
  auto fatbin = reinterpret_cast<Fatbin>(dlsym(lib, "ncclscope_moe_fatbin"));
  ASSERT_NE(fatbin, nullptr);
  size_t bytes = 0, static_bytes = 0;
  fatbin(&bytes);
  ncclscope_moe_fatbin(&static_bytes);
  EXPECT_EQ(bytes, static_bytes) << "the same device code as the static library";
  dlclose(lib);
}

}  // namespace
