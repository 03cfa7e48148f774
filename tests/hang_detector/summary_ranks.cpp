#include "tests/hang_detector/summary_ranks.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace ncclscope::testing {
namespace {

struct Mention {
  std::vector<int> ranks;
  size_t begin = 0;  // where "rank"/"ranks" starts
  size_t end = 0;    // one past the list (and its "(N ranks)" count)
};

bool ReadNumber(const std::string& s, size_t* i, long* out) {
  const size_t start = *i;
  long n = 0;
  while (*i < s.size() && std::isdigit(static_cast<unsigned char>(s[*i])) != 0 && n < (1L << 40)) {
    n = n * 10 + (s[*i] - '0');
    ++*i;
  }
  *out = n;
  return *i > start;
}

// One item of a list: "5", "file2", "0-7", "3-2019:32". Appends its ranks; false when there is
// none at *i.
bool ReadItem(const std::string& s, size_t* i, std::vector<int>* out) {
  long first = 0;
  if (s.compare(*i, 4, "file") == 0) {
    size_t j = *i + 4;
    if (!ReadNumber(s, &j, &first)) return false;
    *i = j;
    out->push_back(-1 - static_cast<int>(first));
    return true;
  }
  size_t j = *i;
  if (!ReadNumber(s, &j, &first)) return false;
  long last = first, step = 1;
  if (j + 1 < s.size() && s[j] == '-' && std::isdigit(static_cast<unsigned char>(s[j + 1])) != 0) {
    ++j;
    ReadNumber(s, &j, &last);
    if (j + 1 < s.size() && s[j] == ':' &&
        std::isdigit(static_cast<unsigned char>(s[j + 1])) != 0) {
      ++j;
      ReadNumber(s, &j, &step);
    }
  }
  if (step <= 0 || last < first || (last - first) / step > (1 << 22)) return false;
  for (long r = first; r <= last; r += step) out->push_back(static_cast<int>(r));
  *i = j;
  return true;
}

std::vector<Mention> RankMentions(const std::string& s) {
  std::vector<Mention> out;
  for (size_t at = s.find("rank"); at != std::string::npos; at = s.find("rank", at + 4)) {
    if (at > 0 && std::isalnum(static_cast<unsigned char>(s[at - 1])) != 0) continue;
    size_t i = at + 4;
    if (i < s.size() && s[i] == 's') ++i;
    if (i >= s.size() || s[i] != ' ') continue;
    ++i;
    Mention m;
    m.begin = at;
    if (!ReadItem(s, &i, &m.ranks)) continue;
    while (i + 1 < s.size() && s[i] == ',') {
      size_t j = i + 1;
      if (!ReadItem(s, &j, &m.ranks)) break;
      i = j;
    }
    // The count RankList adds after long lists: " (127 ranks)".
    if (s.compare(i, 2, " (") == 0) {
      size_t j = i + 2;
      long n = 0;
      if (ReadNumber(s, &j, &n) && s.compare(j, 7, " ranks)") == 0) i = j + 7;
    }
    m.end = i;
    out.push_back(std::move(m));
  }
  return out;
}

bool Follows(const std::string& s, size_t end, std::string_view phrase) {
  return s.compare(end, phrase.size(), phrase) == 0;
}

bool Precedes(const std::string& s, size_t begin, std::string_view phrase) {
  return begin >= phrase.size() && s.compare(begin - phrase.size(), phrase.size(), phrase) == 0;
}

bool NamedAsCulprit(const std::string& s, const Mention& m) {
  // Communicator ranks ("comm ranks 0,3 never joined ...") are not global ranks.
  if (Precedes(s, m.begin, "comm ")) return false;
  static constexpr std::string_view kAfter[] = {" never issued it", " did not issue the matching",
                                                " died or exited",  " froze",
                                                " is gone",         " is frozen",
                                                " never joined",    " never called NCCL",
                                                " is alive (",      " are alive (",
                                                " arrives ",        " are x"};
  static constexpr std::string_view kBefore[] = {"device work never completed on ",
                                                 "never started on ", "wait-for cycle through ",
                                                 "transfers of "};
  for (std::string_view p : kAfter) {
    if (Follows(s, m.end, p)) return true;
  }
  for (std::string_view p : kBefore) {
    if (Precedes(s, m.begin, p)) return true;
  }
  // "rank 0 issued allreduce ... where ranks 4,6 issued allreduce": the first list is the culprit.
  return Follows(s, m.end, " issued ") && !Precedes(s, m.begin, "where ");
}

}  // namespace

std::vector<int> RanksNamed(const std::string& summary) {
  std::vector<int> out;
  for (const Mention& m : RankMentions(summary))
    out.insert(out.end(), m.ranks.begin(), m.ranks.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> RanksNamedAsCulprits(const std::string& summary) {
  std::vector<int> out;
  for (const Mention& m : RankMentions(summary)) {
    if (NamedAsCulprit(summary, m)) out.insert(out.end(), m.ranks.begin(), m.ranks.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string SummaryDisagreement(const std::string& summary, const std::vector<int>& culprits,
                                bool tie) {
  std::string out;
  for (int r : RanksNamedAsCulprits(summary)) {
    if (std::find(culprits.begin(), culprits.end(), r) == culprits.end()) {
      out += "the summary blames rank " + std::to_string(r) + ", which is not a culprit; ";
    }
  }
  if (!tie) {
    const std::vector<int> named = RanksNamed(summary);
    for (int r : culprits) {
      if (!std::binary_search(named.begin(), named.end(), r)) {
        out += "culprit " + std::to_string(r) + " is not named in the summary; ";
      }
    }
  }
  return out;
}

}  // namespace ncclscope::testing
