#include "hang_detector/incident/incident_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hang_detector/incident/incident_key.h"
#include "hang_detector/incident/incident_lifecycle.h"
#include "trace/write_all.h"

namespace ncclscope::hang_detector {

std::string NodeLockPath(const std::string& dir, uint64_t job_key) {
  return dir + "/.watchdog-" + Hex16(job_key) + ".lock";
}

std::string IncidentRecordName(uint64_t job_key) {
  return ".incident-" + Hex16(job_key);
}

std::string VerdictFileName(const std::string& job_id, bool directory_shared) {
  if (!directory_shared) return "verdict.json";
  return "verdict." + job_id + ".json";
}

bool ClaimIncidentStage(const std::string& dir, uint64_t job_key, uint64_t incident,
                        const char* stage) {
  const std::string path =
      dir + "/.incident-" + Hex16(job_key) + "-" + Hex16(incident) + "-" + stage + ".claim";
  const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  const std::string pid = std::to_string(getpid()) + "\n";
  // The claim is the file's existence; its contents only say who took it.
  (void)trace::WriteAll(fd, pid.data(), pid.size());
  close(fd);
  return true;
}

bool WriteFileAtomically(const std::string& dir, const std::string& name,
                         const std::string& contents, std::string* error) {
  const std::string tmp = dir + "/." + name + "." + std::to_string(getpid()) + ".tmp";
  const std::string path = dir + "/" + name;
  const int fd = open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
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
  // An existing tmp file may have had other permissions; the record names ranks and hosts.
  fchmod(fd, 0600);
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::optional<IncidentRecord> ReadIncidentRecord(const std::string& dir, uint64_t job_key,
                                                 int64_t run_start_wall_ns, std::string* error) {
  error->clear();
  const std::string path = dir + "/" + IncidentRecordName(job_key);
  std::string text;
  const int rc = ReadSmallFile(path, &text);
  if (rc == ENOENT) return std::nullopt;
  if (rc != 0) {
    *error = path + ": " + std::strerror(rc);
    return std::nullopt;
  }
  IncidentRecord r;
  std::string why;
  if (!ParseIncident(text, &r, &why)) {
    *error = path + ": " + why;
    return std::nullopt;
  }
  if (!OfThisRun(r, job_key, run_start_wall_ns)) return std::nullopt;
  return r;
}

void ApplyRecordedIncident(const std::string& dir, int64_t now_wall_ns, Analysis* analysis) {
  if (!analysis->usable || analysis->input.files == 0) return;
  std::string error;
  const uint64_t job = JobKey(analysis->input.job, analysis->input.restart);
  const std::optional<IncidentRecord> record =
      ReadIncidentRecord(dir, job, analysis->input.run_start_wall_ns, &error);
  if (!error.empty())
    analysis->input.notes.push_back("ignored the job's incident record: " + error);
  if (record) ApplyIncident(*record, now_wall_ns, analysis);
}

}  // namespace ncclscope::hang_detector
