#include "trace/flight_recorder/fr_groups.h"

#include <algorithm>
#include <tuple>

#include "trace/flight_recorder/utf8.h"

namespace ncclscope::exporters::fr {
namespace {

// A comm name is whatever bytes the application passed; a pickle str must be UTF-8 or Python's
// pickle.load refuses the whole dump. Each byte that starts no valid sequence becomes U+FFFD.
std::string Utf8Name(std::string name) {
  size_t bad = 0;
  size_t from = 0;
  while (from < name.size() &&
         !flight_recorder::IsUtf8AllowingSurrogates(std::string_view(name).substr(from), &bad)) {
    name.replace(from + bad, 1, "\xEF\xBF\xBD");
    from += bad + 3;
  }
  return name;
}

struct Seen {
  std::tuple<int, size_t> order{INT32_MAX, 0};  // (lowest member global rank, its table position)
  std::string name;
  int nranks = 0;
  std::map<int, int> members;  // comm rank -> global rank
};

}  // namespace

JobGroups GroupsOfJob(const std::vector<const trace::RingSnapshot*>& files) {
  std::map<uint64_t, Seen> seen;
  int world_size = 0;
  for (const trace::RingSnapshot* f : files) {
    world_size = std::max(world_size, f->world_size);
    if (f->global_rank < 0) continue;
    for (size_t k = 0; k < f->comms.size(); ++k) {
      const trace::CommInfo& c = f->comms[k];
      if (c.id == 0 || c.rank < 0 || c.nranks <= 0) continue;  // still being created
      Seen& s = seen[c.id];
      s.order = std::min(s.order, std::make_tuple(f->global_rank, k));
      if (s.name.empty()) s.name = c.name;
      s.nranks = std::max(s.nranks, c.nranks);
      s.members.emplace(c.rank, f->global_rank);
    }
  }
  if (world_size <= 0) world_size = static_cast<int>(files.size());

  std::vector<std::pair<uint64_t, const Seen*>> ordered;
  ordered.reserve(seen.size());
  for (const auto& [id, s] : seen) ordered.emplace_back(id, &s);
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second->order, a.first) < std::tie(b.second->order, b.first);
  });

  JobGroups out;
  bool default_named = false;
  for (const auto& [id, s] : ordered) {
    JobGroup g;
    g.comm_id = id;
    g.name = std::to_string(out.groups.size());
    g.nranks = s->nranks;
    // Walks the members seen, not 0..nranks: a damaged header may claim any size.
    for (const auto& [comm_rank, global_rank] : s->members) {
      if (comm_rank < s->nranks) g.ranks.push_back(global_rank);
    }
    g.complete = static_cast<int>(g.ranks.size()) == s->nranks;
    if (!s->name.empty()) {
      g.desc = Utf8Name(s->name);
    } else if (!default_named && s->nranks == world_size) {
      g.desc = "default_pg";
      default_named = true;
    } else {
      g.desc = "pg" + g.name;
    }
    if (!g.complete) {
      out.notes.push_back("pg " + g.name + " (" + g.desc +
                          "): " + std::to_string(s->nranks - static_cast<int>(g.ranks.size())) +
                          " of " + std::to_string(s->nranks) +
                          " members have no ring file; its ranks list only the others, so comm "
                          "ranks past the first gap do not match list positions");
    }
    out.by_comm.emplace(id, out.groups.size());
    out.groups.push_back(std::move(g));
  }
  return out;
}

}  // namespace ncclscope::exporters::fr
