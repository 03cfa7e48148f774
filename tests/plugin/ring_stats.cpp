// Prints "files=F records=R comms=C presence=P finished=E" for the ring files of a directory:
// presence files among them, and files whose writer exited normally (used by preload tests).
#include <cstdio>
#include <string>

#include "trace/ring_layout.h"
#include "trace/ring_reader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ring_stats DIR\n");
    return 2;
  }
  std::string error;
  size_t files = 0, records = 0, comms = 0, presence = 0, finished = 0;
  for (const std::string& path : ncclscope::trace::ListRingFiles(argv[1], &error)) {
    auto snap = ncclscope::trace::ReadRingFile(path, &error);
    if (!snap) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    ++files;
    records += snap->records.size();
    comms += snap->comms.size();
    if ((snap->flags & ncclscope::trace::kHeaderPresence) != 0) ++presence;
    if ((snap->flags & ncclscope::trace::kHeaderFinished) != 0) ++finished;
  }
  std::printf("files=%zu records=%zu comms=%zu presence=%zu finished=%zu\n", files, records, comms,
              presence, finished);
  return 0;
}
