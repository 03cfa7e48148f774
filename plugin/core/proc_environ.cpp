#include "plugin/core/proc_environ.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ncclscope::plugin {

std::map<std::string, std::string> ParseEnviron(std::string_view bytes) {
  std::map<std::string, std::string> vars;
  while (!bytes.empty()) {
    const size_t end = bytes.find('\0');
    const std::string_view entry = bytes.substr(0, end);
    bytes.remove_prefix(end == std::string_view::npos ? bytes.size() : end + 1);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    vars.try_emplace(std::string(entry.substr(0, eq)), entry.substr(eq + 1));
  }
  return vars;
}

bool ReadProcEnviron(int pid, size_t max_bytes, std::string* bytes, std::string* error) {
  const std::string path = "/proc/" + std::to_string(pid) + "/environ";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  bytes->clear();
  char buf[16384];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = path + ": " + std::strerror(errno);
      close(fd);
      return false;
    }
    if (n == 0) break;
    if (bytes->size() + static_cast<size_t>(n) > max_bytes) {
      *error = path + ": larger than " + std::to_string(max_bytes) + " bytes";
      close(fd);
      return false;
    }
    bytes->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

}  // namespace ncclscope::plugin
