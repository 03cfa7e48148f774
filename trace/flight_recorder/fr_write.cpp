#include "trace/flight_recorder/fr_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "trace/flight_recorder/fr_json.h"
#include "trace/flight_recorder/pickle_writer.h"
#include "trace/trace_dir.h"
#include "trace/write_all.h"

namespace ncclscope::exporters::fr {
namespace {

std::string Errno(const std::string& path, const char* what) {
  return path + ": " + what + ": " + std::strerror(errno);
}

// Temporary file, then rename: a reader sees the old file or the whole new one.
bool WriteFileAtomically(const std::string& path, const std::string& bytes, int64_t mtime_ns,
                         std::string* error) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    *error = Errno(tmp, "cannot create");
    return false;
  }
  // O_CREAT's mode does not apply to a file that was already there.
  bool ok =
      fchmod(fd, 0600) == 0 && trace::WriteAll(fd, bytes.data(), bytes.size()) && fsync(fd) == 0;
  if (ok && mtime_ns > 0) {
    const timespec times[2] = {{mtime_ns / 1'000'000'000, mtime_ns % 1'000'000'000},
                               {mtime_ns / 1'000'000'000, mtime_ns % 1'000'000'000}};
    ok = futimens(fd, times) == 0;
  }
  if (!ok) *error = Errno(tmp, "cannot write");
  if (close(fd) != 0 && ok) {
    *error = Errno(tmp, "cannot write");
    unlink(tmp.c_str());
    return false;
  }
  if (!ok) {
    unlink(tmp.c_str());
    return false;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *error = Errno(path, "cannot rename the temporary file to");
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace

std::string EncodeFrFile(const flight_recorder::FrDump& dump, FrFormat format) {
  if (format == FrFormat::kJson) return flight_recorder::EncodeFrDumpJson(dump);
  return flight_recorder::WritePickle(flight_recorder::EncodeFrDump(dump));
}

bool IsValidFrPrefix(std::string_view prefix) {
  return !prefix.empty() && prefix.find('/') == std::string_view::npos && prefix != "." &&
         prefix != ".." && prefix.find('\0') == std::string_view::npos;
}

bool WriteFrDumps(const std::vector<FrRankDump>& dumps, const std::string& dir,
                  const std::string& prefix, FrFormat format, std::vector<std::string>* written,
                  std::string* error) {
  if (!IsValidFrPrefix(prefix)) {
    *error = "'" + prefix + "': a file prefix must be a non-empty name without '/'";
    return false;
  }
  if (!trace::EnsurePrivateDir(dir, error)) return false;
  for (const FrRankDump& d : dumps) {
    const std::string path = dir + "/" + prefix + std::to_string(d.global_rank);
    if (!WriteFileAtomically(path, EncodeFrFile(d.dump, format), d.last_alive_wall_ns, error)) {
      return false;
    }
    written->push_back(path);
  }
  return true;
}

}  // namespace ncclscope::exporters::fr
