// Fuzz target: any bytes read as a job's one ring file and written as a timeline, through a sink
// that checks what every viewer relies on (tracks declared before use, no slice ending before it
// begins, events on a process's own tracks) and through the Chrome JSON writer, whose output must
// parse as JSON whatever the communicator names hold: a trace or an error, never a crash.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "exporters/sources/ring_source.h"
#include "exporters/timeline/chrome_json_writer.h"
#include "exporters/timeline/timeline_builder.h"
#include "tests/fuzz/bytes_source.h"

namespace {

namespace tl = ncclscope::exporters::timeline;

class CheckingSink final : public tl::TimelineSink {
 public:
  void Begin(int64_t, std::string_view) override {
    if (begun_) __builtin_trap();
    begun_ = true;
  }
  void Process(uint64_t uuid, int, std::string_view) override { Declare(uuid); }
  void Track(uint64_t uuid, uint64_t process, int, std::string_view, int) override {
    if (tracks_.count(process) == 0) __builtin_trap();
    Declare(uuid);
  }
  void CounterTrack(uint64_t uuid, uint64_t process, int, std::string_view) override {
    Track(uuid, process, 0, {}, 0);
  }
  void Slice(const tl::SliceEvent& s) override {
    Use(s.track);
    if (s.end_ns != tl::kOpenEnd && s.end_ns < s.begin_ns) __builtin_trap();
    if (s.at_begin != nullptr) Use(s.at_begin->track);
    if (s.at_end != nullptr) Use(s.at_end->track);
  }
  void Instant(uint64_t track, int64_t, std::string_view, std::string_view,
               const std::vector<tl::Arg>&) override {
    Use(track);
  }
  bool Finish(const std::vector<tl::Arg>&, std::string*) override { return true; }

 private:
  void Declare(uint64_t uuid) {
    if (!begun_ || !tracks_.insert(uuid).second) __builtin_trap();  // declared twice
  }
  void Use(uint64_t track) {
    if (tracks_.count(track) == 0) __builtin_trap();
  }
  bool begun_ = false;
  std::set<uint64_t> tracks_;
};

std::string OutputPath() {
  static const std::string path = "/tmp/ncclscope-timeline-fuzz-" + std::to_string(getpid());
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ncclscope::testing::BytesSource source(data, size);
  tl::TimelineOptions options;
  tl::TimelineSummary summary;
  std::string error;
  CheckingSink checking;
  const bool written = tl::WriteTimeline(source, options, &checking, &summary, &error);
  if (!written && error.empty()) __builtin_trap();
  if (!written) return 0;

  tl::ChromeJsonWriter json;
  if (!json.Open(OutputPath(), &error)) return 0;  // no /tmp: nothing to check
  tl::TimelineSummary again;
  if (!tl::WriteTimeline(source, options, &json, &again, &error)) __builtin_trap();
  std::ifstream in(OutputPath());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  unlink(OutputPath().c_str());
  if (!nlohmann::json::accept(text)) __builtin_trap();
  return 0;
}
