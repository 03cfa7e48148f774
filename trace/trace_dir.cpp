#include "trace/trace_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ncclscope::trace {
namespace {

bool MakeOne(const std::string& path, std::string* error) {
  if (mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) return true;
  *error = path + ": cannot create directory: " + std::strerror(errno);
  return false;
}

std::string LinkTarget(const std::string& link) {
  char target[4096];
  const ssize_t n = readlink(link.c_str(), target, sizeof target);
  return n < 0 ? std::string("?") : std::string(target, static_cast<size_t>(n));
}

}  // namespace

bool EnsurePrivateDir(const std::string& dir, std::string* error) {
  if (dir.empty()) {
    *error = "trace directory is empty";
    return false;
  }
  // Parents are created as needed but only the leaf is required to be private: /tmp is shared.
  for (size_t pos = dir.find('/', 1); pos != std::string::npos; pos = dir.find('/', pos + 1)) {
    if (!MakeOne(dir.substr(0, pos), error)) return false;
  }
  if (!MakeOne(dir, error)) return false;
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    *error = dir + ": " + std::strerror(errno);
    return false;
  }
  // A symlink is followed (a trace directory on a bigger disk), but only one this user or root
  // made: anyone else's link in a shared /tmp could send our records wherever they like. The
  // target then passes the same checks as a directory given directly.
  std::string where = dir;
  if (S_ISLNK(st.st_mode)) {
    where = dir + " (symlink to " + LinkTarget(dir) + ")";
    if (st.st_uid != geteuid() && st.st_uid != 0) {
      *error = dir + ": symlink owned by uid " + std::to_string(st.st_uid) +
               ", not by this user or root";
      return false;
    }
    if (stat(dir.c_str(), &st) != 0) {
      *error = where + ": " + std::strerror(errno);
      return false;
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    *error = where + ": not a directory";
    return false;
  }
  if (st.st_uid != geteuid()) {
    *error = where + ": owned by uid " + std::to_string(st.st_uid) + ", not by this user";
    return false;
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    snprintf(mode, sizeof mode, "%03o", st.st_mode & 0777);
    *error = where + ": accessible by other users (mode " + mode + "); expected 0700";
    return false;
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    *error = where + ": not writable: " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace ncclscope::trace
