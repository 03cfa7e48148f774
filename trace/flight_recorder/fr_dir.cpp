#include "trace/flight_recorder/fr_dir.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "trace/flight_recorder/fr_json.h"
#include "trace/flight_recorder/pickle_reader.h"
#include "trace/regular_file.h"
#include "trace/trace_dir.h"

namespace ncclscope::flight_recorder {
namespace {

bool EndsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// The rank a dump's name carries: its last run of digits, after an extension a user may have
// added when collecting ("nccl_trace_rank_12.json"); -1 when there is none or it is absurd.
int RankOfName(std::string name) {
  for (const char* ext : {".json", ".pkl", ".pickle"}) {
    if (EndsWith(name, ext)) {
      name.resize(name.size() - std::strlen(ext));
      break;
    }
  }
  size_t begin = name.size();
  while (begin > 0 && name[begin - 1] >= '0' && name[begin - 1] <= '9') --begin;
  const size_t digits = name.size() - begin;
  if (digits == 0 || digits > 7) return -1;  // more than ten million ranks: not a rank
  return std::stoi(name.substr(begin));
}

// Reads up to `size` bytes at the start of an open file.
size_t ReadPrefix(int fd, char* buf, size_t size) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = pread(fd, buf + got, size - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

FrFormat SniffFrDump(const char* data, size_t size) {
  if (size >= 2 && static_cast<unsigned char>(data[0]) == 0x80 && data[1] >= 2 && data[1] <= 5) {
    return FrFormat::kPickle;
  }
  for (size_t i = 0; i < size; ++i) {
    const char c = data[i];
    if (c == '{') return FrFormat::kJson;
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
  }
  return FrFormat::kNone;
}

bool ListFrDumps(const std::string& dir, FrDumpListing* out, std::string* error) {
  *out = {};
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) {
    *error = dir + ": cannot list: " + std::strerror(errno);
    return false;
  }
  std::vector<FrDumpFile> found;
  while (const dirent* e = readdir(d.get())) {
    const std::string name = e->d_name;
    // Ring files, hidden files and the watchdog's verdict (a JSON object) are ncclscope's own.
    if (name.empty() || name[0] == '.' || EndsWith(name, ".ring") ||
        name == trace::kVerdictFileName) {
      continue;
    }
    const std::string path = dir + "/" + name;
    struct stat st {};
    std::string why;
    const Fd fd{trace::OpenRegularFile(path, &st, &why)};
    if (fd.fd < 0) continue;  // a FIFO (torch's dump-request pipe), a directory, ...
    char head[64];
    const FrFormat format = SniffFrDump(head, ReadPrefix(fd.fd, head, sizeof(head)));
    if (format == FrFormat::kNone) continue;
    const int rank = RankOfName(name);
    if (rank < 0) {
      out->skipped.push_back(path +
                             ": looks like a Flight Recorder dump but its name ends in no "
                             "rank number (torch names them <prefix><global rank>)");
      continue;
    }
    found.push_back({path, rank,
                     static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                     format});
  }
  std::sort(found.begin(), found.end(), [](const FrDumpFile& a, const FrDumpFile& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.mtime_ns > b.mtime_ns;
  });
  for (FrDumpFile& f : found) {
    if (!out->dumps.empty() && out->dumps.back().rank == f.rank) {
      out->skipped.push_back(f.path + ": a second dump of rank " + std::to_string(f.rank) +
                             "; the newer one is read (" + out->dumps.back().path + ")");
      continue;
    }
    out->dumps.push_back(std::move(f));
  }
  return true;
}

bool ReadFrDumpFile(const std::string& path, FrDump* out, std::string* error) {
  struct stat st {};
  std::string why;
  const Fd fd{trace::OpenRegularFile(path, &st, &why)};
  if (fd.fd < 0) {
    *error = path + ": " + why;
    return false;
  }
  const PickleLimits limits;
  const auto size = static_cast<size_t>(st.st_size);
  if (size > limits.max_input_bytes) {
    *error = path + ": " + std::to_string(size) +
             " bytes, more than a Flight Recorder dump holds (" +
             std::to_string(limits.max_input_bytes) + ")";
    return false;
  }
  std::string data(size, '\0');
  if (ReadPrefix(fd.fd, data.data(), size) != size) {
    *error = path + ": cannot read it whole (truncated while reading?)";
    return false;
  }
  std::optional<FrDump> dump;
  switch (SniffFrDump(data.data(), data.size())) {
    case FrFormat::kPickle:
      // Straight into the dump, stack frames checked but not kept: nothing reads them, and they
      // are most of a dump's values.
      dump = DecodeFrDumpPickle(data.data(), data.size(), limits, &why, /*keep_frames=*/false);
      break;
    case FrFormat::kJson:
      if (const std::optional<PickleValue> root = ParseFrJson(data, &why)) {
        dump = DecodeFrDump(*root, &why);
      }
      break;
    case FrFormat::kNone:
      why = "neither a pickle nor a JSON object";
      break;
  }
  if (dump) {
    *out = std::move(*dump);
    return true;
  }
  *error = path + ": " + why;
  return false;
}

}  // namespace ncclscope::flight_recorder
