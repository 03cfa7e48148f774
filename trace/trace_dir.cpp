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

// A symlink is followed only when this user or root made it: anyone else's link in a shared
// directory could send our records wherever they like.
bool TrustedLink(const std::string& path, const struct stat& st, std::string* error) {
  if (st.st_uid == geteuid() || st.st_uid == 0) return true;
  *error =
      path + ": symlink owned by uid " + std::to_string(st.st_uid) + ", not by this user or root";
  return false;
}

// A base the user named: made when missing, otherwise any directory reached through no foreign
// symlink (its owner and mode are the user's business).
bool EnsureBaseDir(const std::string& base, std::string* error) {
  for (size_t pos = base.find('/', 1); pos != std::string::npos; pos = base.find('/', pos + 1)) {
    if (!MakeOne(base.substr(0, pos), error)) return false;
  }
  if (!MakeOne(base, error)) return false;
  struct stat st;
  if (lstat(base.c_str(), &st) != 0) {
    *error = base + ": " + std::strerror(errno);
    return false;
  }
  if (S_ISLNK(st.st_mode)) {
    if (!TrustedLink(base, st, error)) return false;
    if (stat(base.c_str(), &st) != 0) {
      *error = base + " (symlink to " + LinkTarget(base) + "): " + std::strerror(errno);
      return false;
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    *error = base + ": not a directory";
    return false;
  }
  return true;
}

}  // namespace

bool EnsurePrivateSubdirs(const std::string& base, bool private_base,
                          const std::vector<std::string>& below, std::string* dir,
                          std::string* error) {
  if (base.empty()) {
    *error = "trace base directory is empty";
    return false;
  }
  if (private_base ? !EnsurePrivateDir(base, error) : !EnsureBaseDir(base, error)) return false;
  std::string path = base;
  for (const std::string& part : below) {
    path += "/" + part;
    if (!EnsurePrivateDir(path, error)) return false;
  }
  *dir = path;
  return true;
}

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
  // A symlink is followed (a trace directory on a bigger disk) if TrustedLink; the target then
  // passes the same checks as a directory given directly.
  std::string where = dir;
  if (S_ISLNK(st.st_mode)) {
    where = dir + " (symlink to " + LinkTarget(dir) + ")";
    if (!TrustedLink(dir, st, error)) return false;
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
