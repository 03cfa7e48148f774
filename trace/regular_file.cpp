#include "trace/regular_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ncclscope::trace {

const char* FileKind(mode_t mode) {
  if (S_ISREG(mode)) return "regular file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISFIFO(mode)) return "fifo";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISLNK(mode)) return "symlink";
  return "unknown file type";
}

int OpenRegularFile(const std::string& path, struct stat* st, std::string* why) {
  struct stat before {};
  if (stat(path.c_str(), &before) != 0) {
    const int err = errno;
    struct stat link {};
    if (err == ENOENT && lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      *why = "dangling symlink";
    } else {
      *why = std::string("cannot open: ") + std::strerror(err);
    }
    return -1;
  }
  if (!S_ISREG(before.st_mode)) {
    *why = std::string("not a regular file (") + FileKind(before.st_mode) + ")";
    return -1;
  }
  // The entry can be swapped between stat and open: non-blocking so a FIFO put there cannot block
  // us, no controlling terminal from a tty, and the descriptor is checked to be what was stat'ed.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *why = std::string("cannot open: ") + std::strerror(errno);
    return -1;
  }
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_dev != before.st_dev ||
      st->st_ino != before.st_ino) {
    close(fd);
    *why = "not a regular file (replaced while being opened)";
    return -1;
  }
  return fd;
}

}  // namespace ncclscope::trace
