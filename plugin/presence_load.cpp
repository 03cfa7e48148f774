// The library's load: the one thing libncclscope.so does before the program runs. Only in the
// shared library: the static library the tests link would otherwise write presence files from
// every test binary started with a rank in its environment.
#include <cstdlib>

#include "plugin/core/presence.h"

namespace {

__attribute__((constructor)) void AtLibraryLoad() {
  ncclscope::plugin::WritePresence([](const char* name) { return std::getenv(name); },
                                   ncclscope::plugin::ReadParentEnviron);
}

}  // namespace
