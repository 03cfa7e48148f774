#include "exporters/report/svg_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "exporters/report/html.h"

namespace ncclscope::exporters::report {

namespace {

constexpr int kLabelWidth = 260;  // px left of the time axis, for rank names
constexpr int kPlotWidth = 900;
constexpr int kRowHeight = 22;
constexpr int kAxisHeight = 28;

// A stable, readable colour per communicator name.
std::string CommColour(const std::string& comm) {
  const size_t h = std::hash<std::string>()(comm);
  return fmt::format("hsl({},55%,55%)", h % 360);
}

std::string Duration(double seconds) {
  if (seconds < 1e-3) return fmt::format("{:.1f} us", seconds * 1e6);
  if (seconds < 1) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.2f} s", seconds);
}

}  // namespace

void SvgTimeline::Begin(int64_t, std::string_view) {}

void SvgTimeline::Process(uint64_t uuid, int pid, std::string_view name) {
  rows_[pid].name = std::string(name);
  pid_of_track_[uuid] = pid;
}

void SvgTimeline::Track(uint64_t uuid, uint64_t, int pid, std::string_view name, int) {
  pid_of_track_[uuid] = pid;
  const size_t at = name.find(" · stream");
  if (at != std::string_view::npos) comm_of_track_[uuid] = std::string(name.substr(0, at));
}

void SvgTimeline::CounterTrack(uint64_t uuid, uint64_t, int pid, std::string_view) {
  pid_of_track_[uuid] = pid;
}

void SvgTimeline::Slice(const timeline::SliceEvent& s) {
  if (s.category != "device") return;
  const auto pid = pid_of_track_.find(s.track);
  if (pid == pid_of_track_.end()) return;
  Row& row = rows_[pid->second];
  if (row.bars.size() >= kMaxSlicesPerRank) {
    ++row.dropped;
    return;
  }
  std::string label(s.name);
  if (s.args != nullptr) {
    for (const timeline::Arg& a : *s.args) {
      if (a.key == "seq") label += fmt::format(" #{}", a.int_value);
    }
  }
  const auto comm = comm_of_track_.find(s.track);
  row.bars.push_back(
      {s.begin_ns, s.end_ns, std::move(label), comm == comm_of_track_.end() ? "" : comm->second});
}

void SvgTimeline::Instant(uint64_t track, int64_t ts_ns, std::string_view name,
                          std::string_view category, const std::vector<timeline::Arg>&) {
  if (category != "verdict") return;
  const auto pid = pid_of_track_.find(track);
  if (pid == pid_of_track_.end()) return;
  rows_[pid->second].marks.push_back({ts_ns, std::string(name)});
}

bool SvgTimeline::Finish(const std::vector<timeline::Arg>&, std::string*) {
  return true;
}

std::string SvgTimeline::Render(int64_t from_ns, int64_t to_ns) const {
  int64_t lo = from_ns;
  int64_t hi = to_ns;
  if (lo == INT64_MIN || hi == INT64_MAX) {
    int64_t first = INT64_MAX;
    int64_t last = INT64_MIN;
    for (const auto& [pid, row] : rows_) {
      for (const Bar& b : row.bars) {
        first = std::min(first, b.begin_ns);
        last = std::max(last, b.end_ns == timeline::kOpenEnd ? b.begin_ns : b.end_ns);
      }
      for (const Mark& m : row.marks) last = std::max(last, m.ts_ns);
    }
    if (lo == INT64_MIN) lo = first;
    if (hi == INT64_MAX) hi = last;
  }
  if (lo == INT64_MAX || hi <= lo) hi = lo + 1;
  const double span = static_cast<double>(hi - lo);
  auto x = [&](int64_t t) {
    const double f = std::clamp(static_cast<double>(t - lo) / span, 0.0, 1.0);
    return kLabelWidth + f * kPlotWidth;
  };
  const int height = kAxisHeight + static_cast<int>(rows_.size()) * kRowHeight + 4;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"{}\" height=\"{}\" "
      "role=\"img\" aria-label=\"device work of the ranks shown\">\n",
      kLabelWidth + kPlotWidth + 10, height);
  // Time axis: five ticks, relative to the window's start.
  for (int k = 0; k <= 4; ++k) {
    const double px = kLabelWidth + kPlotWidth * k / 4.0;
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" class=\"tick\"/>"
        "<text x=\"{0:.1f}\" y=\"14\" class=\"axis\">+{3}</text>\n",
        px, kAxisHeight - 8, height, Html(Duration(span * k / 4.0 * 1e-9)));
  }
  int y = kAxisHeight;
  for (const auto& [pid, row] : rows_) {
    svg += fmt::format("<text x=\"4\" y=\"{}\" class=\"rank\">{}</text>\n", y + 15,
                       Html(row.name.substr(0, 40)));
    for (const Bar& b : row.bars) {
      const bool open = b.end_ns == timeline::kOpenEnd;
      const double x0 = x(b.begin_ns);
      const double x1 = open ? kLabelWidth + kPlotWidth : std::max(x(b.end_ns), x0 + 0.5);
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"{}>"
          "<title>{}{}</title></rect>\n",
          x0, y + 3, x1 - x0, kRowHeight - 6, open ? "#e53935" : CommColour(b.comm),
          open ? " class=\"open\"" : "", Html(b.comm + " " + b.label),
          open ? " (never completed)" : "");
    }
    for (const Mark& m : row.marks) {
      const double px = x(m.ts_ns);
      svg += fmt::format(
          "<path d=\"M{0:.1f} {1} l-6 -9 h12 z\" class=\"verdict\"><title>{2}</title></path>\n", px,
          y + kRowHeight - 2, Html(m.label));
    }
    if (row.dropped > 0) {
      svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\">+{} more</text>\n",
                         kLabelWidth + kPlotWidth - 60, y + 15, row.dropped);
    }
    y += kRowHeight;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace ncclscope::exporters::report
