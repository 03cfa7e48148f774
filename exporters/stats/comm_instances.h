// Which communicator a row of `ncclscope stats` or `ncclscope report` is about. A job holds
// several communicators of one name (a split's colours: `tp` of ranks 0-1, 2-3, 4-5, 6-7), so a
// communicator is named by its name and its members, in the correlator's rank notation:
// `tp (ranks 2,3)`, `dp (ranks 1-7:2)`, `world (ranks 0-4095)`. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncclscope::exporters {

struct CommInstance {
  uint64_t id = 0;
  std::string name;  // its commName, or its id in hex when it has none
  int nranks = -1;   // the largest size a member's comm table gave; -1 when none did
  std::vector<int>
      members;  // global ranks of the files it appears in, sorted; unknown ones left out
  // `name (ranks ...)`, plus `; N unseen` when fewer members have a file than nranks says, plus
  // `, id 3f2a9c1b` when another communicator would read the same (a communicator re-created
  // over the same ranks).
  std::string label;
};

// Fills in every `label` of `comms`; each label differs from the others'.
void LabelCommInstances(std::vector<CommInstance>* comms);

// The communicator of `id` in `comms` (sorted by id), or nullptr.
const CommInstance* FindCommInstance(const std::vector<CommInstance>& comms, uint64_t id);

}  // namespace ncclscope::exporters
