#include "collectives/gpu_check/moe_compare.h"

#include <cstdio>
#include <cstring>

namespace ncclscope::gpu_check {
namespace {

// The first index where the arrays differ, or n.
template <typename T>
size_t FirstDifferent(const T* a, const T* b, size_t n) {
  if (std::memcmp(a, b, n * sizeof(T)) == 0) return n;
  size_t i = 0;
  while (std::memcmp(a + i, b + i, sizeof(T)) == 0) ++i;
  return i;
}

std::string Source(const ncclscope_moe_source& s) {
  return "{rank " + std::to_string(s.rank) + ", token " + std::to_string(s.token) + ", slot " +
         std::to_string(s.k) + "}";
}

std::string CompareStatus(const char* call, int r, const ncclscope_moe_status& got,
                          const ncclscope_moe_status& want) {
  std::string who = "rank " + std::to_string(r) + ": " + call + " status ";
  if (std::memcmp(&got, &want, sizeof(got)) != 0) {
    return who + "is " + StatusText(got) + ", the CPU twin's " + StatusText(want);
  }
  if (got.code != NCCLSCOPE_MOE_OK) return who + "is " + StatusText(got) + " on both";
  return "";
}

}  // namespace

std::string StatusText(const ncclscope_moe_status& s) {
  return std::string(ncclscope_moe_result_string(s.code)) + " (code " + std::to_string(s.code) +
         ", rank " + std::to_string(s.rank) + ", detail " + std::to_string(s.detail) + ")";
}

std::string CompareDispatch(const ncclscope_moe_plan& p, int r, const MoeRankOutput& got,
                            const MoeRankOutput& want) {
  std::string wrong = CompareStatus("dispatch", r, got.dispatch_status, want.dispatch_status);
  if (!wrong.empty()) return wrong;
  const std::string who = "rank " + std::to_string(r) + ": ";
  char line[256];
  size_t i =
      FirstDifferent(got.recv_counts.data(), want.recv_counts.data(), want.recv_counts.size());
  if (i < want.recv_counts.size()) {
    std::snprintf(line, sizeof(line),
                  "recv_counts[%zu] (local expert %zu) is %d, the CPU twin's %d", i, i,
                  got.recv_counts[i], want.recv_counts[i]);
    return who + line;
  }
  i = FirstDifferent(got.recv_src.data(), want.recv_src.data(), want.recv_src.size());
  if (i < want.recv_src.size()) {
    return who + "recv_src[" + std::to_string(i) + "] is " + Source(got.recv_src[i]) +
           ", the CPU twin's " + Source(want.recv_src[i]);
  }
  i = FirstDifferent(got.send_rows.data(), want.send_rows.data(), want.send_rows.size());
  if (i < want.send_rows.size()) {
    const auto k = static_cast<size_t>(p.config.top_k);
    std::snprintf(line, sizeof(line),
                  "send_rows[%zu] (token %zu, slot %zu) is %d, the CPU twin's %d", i, i / k, i % k,
                  got.send_rows[i], want.send_rows[i]);
    return who + line;
  }
  i = FirstDifferent(got.recv_x.data(), want.recv_x.data(), got.recv_x.size());
  if (i < got.recv_x.size()) {
    const auto row_bytes = static_cast<size_t>(p.row_bytes);
    const size_t row = i / row_bytes;
    const ncclscope_moe_source& s = want.recv_src[row];
    std::snprintf(line, sizeof(line),
                  "recv_x byte %zu (row %zu, element %zu: rank %d's token %d, slot %d) is 0x%02x, "
                  "the CPU twin's 0x%02x",
                  i, row, i % row_bytes / static_cast<size_t>(p.element_bytes), s.rank, s.token,
                  s.k, got.recv_x[i], want.recv_x[i]);
    return who + line;
  }
  return "";
}

std::string CompareCombine(const ncclscope_moe_plan& p, int r, const MoeRankOutput& got,
                           const MoeRankOutput& want) {
  std::string wrong = CompareStatus("combine", r, got.combine_status, want.combine_status);
  if (!wrong.empty()) return wrong;
  const size_t i = FirstDifferent(got.out.data(), want.out.data(), want.out.size());
  if (i == want.out.size()) return "";
  const auto row_bytes = static_cast<size_t>(p.row_bytes);
  char line[200];
  std::snprintf(line, sizeof(line),
                "rank %d: out byte %zu (token %zu, element %zu) is 0x%02x, the CPU twin's 0x%02x",
                r, i, i / row_bytes, i % row_bytes / static_cast<size_t>(p.element_bytes),
                got.out[i], want.out[i]);
  return line;
}

}  // namespace ncclscope::gpu_check
