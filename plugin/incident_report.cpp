#include "plugin/incident_report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "hang_detector/verdict_text.h"
#include "trace/write_all.h"

namespace ncclscope::plugin {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

uint64_t HashText(uint64_t h, const std::string& s) {
  for (const char c : s) h = Mix(h, static_cast<unsigned char>(c));
  return h;
}

}  // namespace

uint64_t IncidentKey(const hang_detector::Verdict& v) {
  uint64_t h = 0x6e63636c73636f70ULL;
  if (v.comm_id != 0) {
    // The class may differ between ranks looking a few ms apart (missing vs desync); the stuck
    // operation does not.
    h = Mix(h, v.comm_id);
    h = HashText(h, v.op);
    return Mix(h, v.seq);
  }
  h = HashText(h, hang_detector::VerdictClassName(v.cls));
  for (const int r : v.culprits) h = Mix(h, static_cast<uint64_t>(r));
  return h;
}

bool ClaimIncident(const std::string& dir, const hang_detector::Verdict& v, int64_t onset_wall_ns,
                   const char* stage) {
  struct stat st {};
  const std::string stamp = dir + "/.verdict-" + stage + ".stamp";
  if (stat(stamp.c_str(), &st) == 0) {
    const int64_t mtime =
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    if (mtime >= onset_wall_ns) return false;
  }
  char name[96];
  std::snprintf(name, sizeof name, "/.verdict-%016llx-%s.lock",
                static_cast<unsigned long long>(IncidentKey(v)), stage);
  const std::string lock = dir + name;
  const int fd = open(lock.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  char pid[32];
  const int n = std::snprintf(pid, sizeof pid, "%d\n", static_cast<int>(getpid()));
  if (write(fd, pid, static_cast<size_t>(n)) < 0) {
    // The lock is the file's existence; its contents only say who took it.
  }
  close(fd);
  // The stamp's time is what later claims compare with: (re)write it now.
  const int sfd = open(stamp.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (sfd >= 0) {
    futimens(sfd, nullptr);
    close(sfd);
  }
  return true;
}

bool WriteFileAtomically(const std::string& dir, const std::string& name,
                         const std::string& contents, std::string* error) {
  const std::string tmp = dir + "/." + name + "." + std::to_string(getpid()) + ".tmp";
  const std::string path = dir + "/" + name;
  const int fd = open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = tmp + ": " + std::strerror(errno);
    return false;
  }
  if (!trace::WriteAll(fd, contents.data(), contents.size())) {
    *error = tmp + ": " + std::strerror(errno);
    close(fd);
    unlink(tmp.c_str());
    return false;
  }
  // An existing tmp file may have had other permissions; the verdict names ranks and hosts.
  fchmod(fd, 0600);
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::string VerdictBlock(const hang_detector::Analysis& a, const std::string& verdict_path,
                         int rank, int pid) {
  constexpr size_t kMaxEvidence = 4;
  char head[128];
  std::snprintf(head, sizeof head, "ncclscope: watchdog of rank %d (pid %d): ", rank, pid);
  std::string out;
  for (size_t i = 0; i < a.verdicts.size(); ++i) {
    const hang_detector::Verdict& v = a.verdicts[i];
    out += head + hang_detector::VerdictHeadline(v) + "\n";
    if (i != 0) continue;
    for (size_t e = 0; e < v.evidence.size() && e < kMaxEvidence; ++e) {
      out += "ncclscope:   rank " + std::to_string(v.evidence[e].rank) + ": " + v.evidence[e].text +
             "\n";
    }
    if (v.evidence.size() > kMaxEvidence) {
      out += "ncclscope:   (" + std::to_string(v.evidence.size() - kMaxEvidence) + " more)\n";
    }
  }
  out += "ncclscope: verdict written to " + verdict_path + "\n";
  return out;
}

}  // namespace ncclscope::plugin
