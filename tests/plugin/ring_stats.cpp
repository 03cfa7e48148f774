// Prints "files=F records=R comms=C" for the ring files of a directory (used by preload tests).
#include <cstdio>
#include <string>

#include "trace/ring_reader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ring_stats DIR\n");
    return 2;
  }
  std::string error;
  size_t files = 0, records = 0, comms = 0;
  for (const std::string& path : ncclscope::trace::ListRingFiles(argv[1], &error)) {
    auto snap = ncclscope::trace::ReadRingFile(path, &error);
    if (!snap) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    ++files;
    records += snap->records.size();
    comms += snap->comms.size();
  }
  std::printf("files=%zu records=%zu comms=%zu\n", files, records, comms);
  return 0;
}
