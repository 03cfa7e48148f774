#include "cuda/driver.h"

#include <dlfcn.h>

#include <array>
#include <memory>
#include <mutex>

namespace ncclscope::cuda {
namespace {

// The first of name, fallback the library has, into *slot.
template <typename Fn>
void Bind(void* library, const char* name, const char* fallback, Fn* slot) {
  void* p = dlsym(library, name);
  if (p == nullptr && fallback[0] != '\0') p = dlsym(library, fallback);
  *slot = reinterpret_cast<Fn>(p);
}

// The tables SharedDriver handed out, by library; a process names one library (tests a few more).
// Never freed: callers keep pointers into them until exit.
struct Loaded {
  std::string library;
  Driver driver;
};
constexpr size_t kMaxLibraries = 8;

}  // namespace

bool OpenDriver(const std::string& library, Driver* driver, std::string* error) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = "cannot load " + library + ": " + (why != nullptr ? why : "unknown error");
    return false;
  }
  Driver d;
#define NCCLSCOPE_CUDA_BIND(slot, uses, name, fallback, ...) Bind(handle, name, fallback, &d.slot);
  NCCLSCOPE_CUDA_FUNCTIONS(NCCLSCOPE_CUDA_BIND)
#undef NCCLSCOPE_CUDA_BIND
  *driver = d;
  return true;
}

const Driver* SharedDriver(const std::string& library, std::string* error) {
  static std::mutex mutex;
  static std::array<Loaded*, kMaxLibraries> loaded{};
  std::lock_guard<std::mutex> lock(mutex);
  size_t i = 0;
  for (; i < loaded.size() && loaded[i] != nullptr; ++i) {
    if (loaded[i]->library == library) return &loaded[i]->driver;
  }
  if (i == loaded.size()) {
    *error = "cannot load " + library + ": too many CUDA driver libraries in one process";
    return nullptr;
  }
  auto entry = std::make_unique<Loaded>();
  if (!OpenDriver(library, &entry->driver, error)) return nullptr;
  entry->library = library;
  loaded[i] = entry.release();
  return &loaded[i]->driver;
}

bool Supports(const Driver& driver, unsigned uses, std::string* error) {
#define NCCLSCOPE_CUDA_REQUIRE(slot, needed_by, name, fallback, ...)              \
  if ((uses & static_cast<unsigned>(needed_by)) != 0 && driver.slot == nullptr) { \
    *error = std::string("symbol ") + name + " missing from the CUDA driver";     \
    return false;                                                                 \
  }
  NCCLSCOPE_CUDA_FUNCTIONS(NCCLSCOPE_CUDA_REQUIRE)
#undef NCCLSCOPE_CUDA_REQUIRE
  return true;
}

bool LoadDriverFor(unsigned use, const std::string& library, Driver* driver, std::string* error) {
  const Driver* shared = SharedDriver(library, error);
  if (shared == nullptr || !Supports(*shared, use, error)) return false;
  *driver = *shared;
  return true;
}

std::string ErrorText(const Driver& driver, CUresult result) {
  const char* text = nullptr;
  if (driver.get_error_string != nullptr &&
      driver.get_error_string(result, &text) == CUDA_SUCCESS && text != nullptr) {
    return std::string(text) + " (" + std::to_string(static_cast<int>(result)) + ")";
  }
  return "CUresult " + std::to_string(static_cast<int>(result));
}

}  // namespace ncclscope::cuda
