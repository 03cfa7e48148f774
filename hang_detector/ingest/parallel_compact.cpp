#include "hang_detector/ingest/parallel_compact.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace ncclscope::hang_detector {

CompactedFiles CompactInParallel(
    size_t count, int threads,
    const std::function<bool(size_t i, RankFileBuilder* builder, std::string* error)>& visit) {
  std::vector<RankFile> files(count);
  std::vector<std::string> errors(count);
  // One byte per file, not vector<bool>: workers write neighbouring entries concurrently.
  std::vector<char> ok(count, 0);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) {
      RankFileBuilder builder(&files[i]);
      ok[i] = visit(i, &builder, &errors[i]) ? 1 : 0;
    }
  };
  CompactedFiles out;
  out.threads = std::max(1, std::min<int>(threads, static_cast<int>(count)));
  std::vector<std::thread> pool;
  for (int t = 1; t < out.threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  out.readable.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (ok[i] != 0) {
      out.readable.push_back(std::move(files[i]));
    } else {
      out.errors.push_back(std::move(errors[i]));
    }
  }
  return out;
}

}  // namespace ncclscope::hang_detector
