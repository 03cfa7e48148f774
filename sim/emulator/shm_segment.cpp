#include "sim/emulator/shm_segment.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sim/emulator/env_config.h"

namespace ncclsim {

std::string segmentName(uint64_t id_hash) {
  static const std::string tag = envToken("NCCLSIM_JOB_TAG", "default");
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(id_hash));
  return "/ncclsim-" + tag + "-" + hex;
}

bool mapSegment(const std::string& name, size_t bytes, ShmMapping* out, std::string* err) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) {
    *err = "shm_open(" + name + "): " + std::strerror(errno);
    return false;
  }
  // Several ranks size the object concurrently; the lock makes check-then-grow atomic so a rank
  // with a smaller idea of the size can never truncate pages another rank already uses.
  flock(fd, LOCK_EX);
  struct stat st;
  bool ok = fstat(fd, &st) == 0;
  if (ok && size_t(st.st_size) < bytes) ok = ftruncate(fd, off_t(bytes)) == 0;
  if (!ok) *err = "sizing " + name + ": " + std::strerror(errno);
  flock(fd, LOCK_UN);
  if (!ok) {
    close(fd);
    return false;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int saved = errno;
  close(fd);
  if (p == MAP_FAILED) {
    *err = "mmap(" + name + "): " + std::strerror(saved);
    return false;
  }
  out->base = p;
  out->bytes = bytes;
  return true;
}

void unmapSegment(ShmMapping* m) {
  if (m->base != nullptr) munmap(m->base, m->bytes);
  m->base = nullptr;
  m->bytes = 0;
}

void unlinkSegment(const std::string& name) {
  shm_unlink(name.c_str());
}

}  // namespace ncclsim
