// Arrival lateness and the straggler score, from device completions as they stream in. The rank
// that arrives last at a collective waits least between its start and the completion (design.md,
// "Identity and time"), so no two hosts' clocks are ever compared: per collective, the lateness of
// rank r is the median wait of the other members minus r's wait, clipped at 0; a rank's lateness
// is the median of that over the newest kLatenessWindow collectives complete on every member the
// exporter sees, and its score is that lateness over the communicator's median collective
// duration, capped at 1. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>
#include <vector>

namespace ncclscope::exporters {

inline constexpr size_t kLatenessWindow = 64;
// Collectives still waiting for a member's completion, per communicator; older ones are dropped
// (a dead member never completes anything, and must not make the exporter grow).
inline constexpr size_t kMaxIncomplete = 1024;

// The lateness of each member of one collective from its wait (completion - start of its device
// work, one host's clock each): the median wait of the others minus its own, clipped at 0. All
// zeros with fewer than two members. Pure.
std::vector<double> CollectiveLateness(const std::vector<double>& waits);

struct Lateness {
  double seconds = 0;
  double score = 0;  // 0..1
};

class ArrivalLateness {
 public:
  // The members (file ids) of communicator `comm` that the exporter sees; call whenever the set
  // may have changed. A collective is complete once all of them have reported it.
  void SetMembers(uint64_t comm, std::vector<uint32_t> members);
  // Member `member` completed collective `seq` of `comm`: wait = completion - start of its device
  // work, duration = completion - enqueue, both of one host's clock.
  void Completed(uint64_t comm, uint64_t seq, uint32_t member, double wait_s, double duration_s);
  // Scores the collectives now complete on every member, oldest first. Call after a round of
  // Completed and SetMembers (one refresh), so files read later in the round still count.
  void Settle();
  // As of the last Settle; 0 / 0 until a collective is complete on every member (or with a
  // single visible member).
  Lateness Of(uint64_t comm, uint32_t member) const;
  // A member's file is gone: forget it everywhere.
  void ForgetMember(uint32_t member);

 private:
  struct Arrival {
    uint32_t member;
    double wait_s;
    double duration_s;
  };
  struct Sample {
    std::vector<std::pair<uint32_t, double>> lateness;  // (member, lateness), sorted by member
    double duration_s = 0;
  };
  using Incomplete = std::map<uint64_t, std::vector<Arrival>>;  // by sequence number
  struct Comm {
    std::vector<uint32_t> members;   // sorted
    std::vector<uint8_t> is_member;  // by member id (file ids are small): O(1) membership
    Incomplete incomplete;
    // Where the last Completed went: a file reports its collectives in sequence order, so the
    // next one is usually this entry or the one after.
    Incomplete::iterator last;
    bool has_last = false;
    std::deque<Sample> window;  // newest last
    // Of() for every member seen in the window, by member: recomputed by Settle when the window
    // changed, so that a scrape's lookups are a binary search each.
    std::vector<std::pair<uint32_t, Lateness>> results;
    bool window_changed = false;
  };
  std::vector<Arrival>& Slot(Comm& c, uint64_t seq);
  static bool IsMember(const Comm& c, uint32_t member) {
    return member < c.is_member.size() && c.is_member[member] != 0;
  }
  static void IndexMembers(Comm& c);
  // Whether every visible member reported.
  static bool IsComplete(const Comm& c, const std::vector<Arrival>& arrivals);
  static void Finish(Comm& c, std::vector<Arrival> arrivals);
  static void Summarize(Comm& c);

  std::unordered_map<uint64_t, Comm> comms_;
};

}  // namespace ncclscope::exporters
