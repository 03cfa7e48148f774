#include "tools/trace_dirs.h"

#include <sys/stat.h>

#include <map>
#include <utility>

namespace ncclscope::tools {

std::string NameDirs(const std::vector<std::string>& dirs) {
  constexpr size_t kNamed = 3;
  std::string out;
  for (size_t i = 0; i < dirs.size() && i < kNamed; ++i) {
    const bool last = i + 1 == dirs.size();
    out += (i == 0 ? "" : last ? " and " : ", ") + dirs[i];
  }
  if (dirs.size() > kNamed) out += " and " + std::to_string(dirs.size() - kNamed) + " more";
  return out;
}

bool EachDirOnce(const std::vector<std::string>& dirs, std::string* error) {
  std::map<std::pair<dev_t, ino_t>, const std::string*> seen;
  for (const std::string& dir : dirs) {
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) continue;
    const auto [it, added] = seen.emplace(std::make_pair(st.st_dev, st.st_ino), &dir);
    if (!added) {
      *error =
          dir + ": given twice (as " + *it->second + " too): each directory's files are read once";
      return false;
    }
  }
  return true;
}

bool ReadableDirsOnce(const std::vector<std::string>& dirs, std::string* error) {
  for (const std::string& dir : dirs) {
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      *error = dir + ": not a readable directory";
      return false;
    }
  }
  return EachDirOnce(dirs, error);
}

}  // namespace ncclscope::tools
