// A private temporary directory removed with its files when the test ends.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace ncclscope::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ncclscope-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { RemoveTree(path_); }
  const std::string& path() const { return path_; }

 private:
  static void RemoveTree(const std::string& path) {
    if (DIR* d = opendir(path.c_str())) {
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        std::string child = path + "/" + name;
        if (e->d_type == DT_DIR) {
          RemoveTree(child);
        } else {
          unlink(child.c_str());
        }
      }
      closedir(d);
    }
    rmdir(path.c_str());
  }
  std::string path_;
};

}  // namespace ncclscope::testing
