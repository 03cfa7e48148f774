// A program that is not linked against NCCL and dlopens it after start (as JAX or CuPy do), then
// calls it through the global scope. Preloaded with the probe, the calls must be recorded.
// Usage: nccl_late_dlopen PATH_OF_LIBNCCL
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>

template <typename Fn>
Fn Resolve(const char* name) {
  // RTLD_DEFAULT finds the first definition in load order: the preloaded probe, when there is one.
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

int main(int argc, char** argv) {
  if (argc != 2 || dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    std::fprintf(stderr, "cannot dlopen %s: %s\n", argc == 2 ? argv[1] : "(none)", dlerror());
    return 2;
  }
  auto get_id = Resolve<decltype(&ncclGetUniqueId)>("ncclGetUniqueId");
  auto init = Resolve<decltype(&ncclCommInitRank)>("ncclCommInitRank");
  auto all_reduce = Resolve<decltype(&ncclAllReduce)>("ncclAllReduce");
  auto destroy = Resolve<decltype(&ncclCommDestroy)>("ncclCommDestroy");
  if (get_id == nullptr || init == nullptr || all_reduce == nullptr || destroy == nullptr) {
    std::fprintf(stderr, "NCCL symbols not found after dlopen\n");
    return 2;
  }
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  ncclComm_t comm = nullptr;
  float buf[4] = {1, 2, 3, 4};
  const int rc = get_id(&id) | init(&comm, 1, id, 0) |
                 all_reduce(buf, buf, 4, ncclFloat32, ncclSum, comm, nullptr) | destroy(comm);
  std::printf("rc=%d\n", rc);
  return rc == 0 ? 0 : 1;
}
