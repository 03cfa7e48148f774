#include "exporters/multinode/digest_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "trace/write_all.h"

namespace ncclscope::exporters {

bool WriteFileAtomically(const std::string& path, const std::string& bytes, std::string* error) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  // Hidden and unique per writer: readers that list *.digest never pick it up half-written.
  const std::string tmp =
      (dir / ("." + target.filename().string() + "." + std::to_string(getpid()) + ".tmp")).string();
  auto fail = [&](const std::string& step) {
    *error = path + ": " + step + ": " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  };
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return fail("cannot create " + tmp);
  const bool written = trace::WriteAll(fd, bytes.data(), bytes.size()) && fsync(fd) == 0;
  const int saved = errno;
  if (close(fd) != 0 || !written) {
    if (!written) errno = saved;
    return fail("cannot write " + tmp);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename " + tmp + " over it");
  // The rename itself reaches the disk only with the directory.
  const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return true;
}

}  // namespace ncclscope::exporters
