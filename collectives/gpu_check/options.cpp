#include "collectives/gpu_check/options.h"

#include <cstdlib>
#include <cstring>

#include "collectives/types/accel_types.h"

namespace ncclscope::gpu_check {
namespace {

// "64k", "16M", "1g", "4096".
bool ParseBytes(const char* s, size_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s) return false;
  unsigned long long scale = 1;
  if (*end == 'k' || *end == 'K') scale = 1ull << 10;
  if (*end == 'm' || *end == 'M') scale = 1ull << 20;
  if (*end == 'g' || *end == 'G') scale = 1ull << 30;
  if (scale != 1) ++end;
  if (*end != '\0') return false;
  *out = static_cast<size_t>(v * scale);
  return true;
}

bool ParseUint(const char* s, uint64_t* out) {
  char* end = nullptr;
  *out = std::strtoull(s, &end, 10);
  return end != s && *end == '\0';
}

// "2-8", "2,4,8", "2-4,8" or "none".
bool ParseRanks(const char* s, std::vector<int>* out) {
  out->clear();
  if (std::strcmp(s, "none") == 0) return true;
  std::string text(s);
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const size_t dash = item.find('-');
    const int lo = std::atoi(item.substr(0, dash).c_str());
    const int hi = dash == std::string::npos ? lo : std::atoi(item.substr(dash + 1).c_str());
    if (lo < 2 || hi > collectives::kMaxRanks || lo > hi) return false;
    for (int n = lo; n <= hi; ++n) out->push_back(n);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return !out->empty();
}

}  // namespace

const char kUsage[] =
    "usage: ncclscope-gpu-check [options]\n"
    "Runs ncclscope's AllReduce, AlltoAll, exchange (grouped send/recv) and MoE dispatch/combine\n"
    "kernels with simulated ranks on one GPU, checks every output bit for bit against the CPU\n"
    "twins and what the senders sent, checks that an absent rank ends the others' kernels with "
    "the\n"
    "stall reported, runs the AllReduce and AlltoAll kernels from several processes over CUDA\n"
    "IPC, and prints timings. Exit 0: every result right; 1: a wrong result, a stall or an error;\n"
    "3: a hang.\n"
    "  --ranks LIST           simulated rank counts on one device (2-8)\n"
    "  --reps N               runs of each case up to --big-bytes (20)\n"
    "  --big-reps N           runs of each larger case (3)\n"
    "  --big-bytes B          (1M)\n"
    "  --max-bytes B          leave out larger cases (64M)\n"
    "  --force-other-max B    also run the algorithm the table does not pick up to B (1M)\n"
    "  --ipc-ranks LIST       process counts for the IPC check, or none (2,4,8)\n"
    "  --ipc-reps N           runs of each IPC case (3)\n"
    "  --ipc-max-bytes B      largest IPC case (256K)\n"
    "  --timeout-ms MS        the kernels' bounded wait (20000)\n"
    "  --stall-timeout-ms MS  bounded wait of the absent-rank check, 0 to skip it (2000)\n"
    "  --exchange-stall-timeout-ms MS  the same for the exchange kernel, 0 to skip it (500)\n"
    "  --copy-bytes B         device-to-device copy for the HBM ceiling (256M)\n"
    "  --wrap-after N         calls per rank count before the epoch counter wraps (40)\n"
    "  --moe on|off           the MoE dispatch/combine cases (on): hidden 128 top-1 and skewed\n"
    "                         top-8, hidden 7168 top-8 with 16 tokens a rank, for fp32, fp16 and\n"
    "                         bf16, --reps runs each; hidden 7168 top-8 of 256 experts with 128\n"
    "                         tokens a rank in bf16 (the low-latency shape, --reps runs) and, for\n"
    "                         the largest rank count, 4096 (--big-reps runs); each only when its\n"
    "                         token rows (a rank's) fit --max-bytes; in the IPC check, the\n"
    "                         hidden-128 cases with --ipc-reps runs each\n"
    "  --moe-ranks LIST       the rank counts of --ranks that run the MoE cases (all)\n"
    "  --seed N               random inputs (1)\n"
    "  --device N             CUDA device (0)\n"
    "  --self-test-corrupt    flip one output byte before the first comparison, one in the\n"
    "                         first exchange group and one in the first MoE dispatch's recv_x\n"
    "                         (all must fail)\n"
    "Sizes take k, M or G.\n";

bool ParseOptions(int argc, char** argv, Options* o, bool* help, std::string* error) {
  o->ranks = {2, 3, 4, 5, 6, 7, 8};
  o->ipc_ranks = {2, 4, 8};
  o->ipc_limits.max_bytes = 256u << 10;
  o->ipc_limits.force_other_max = 256u << 10;
  o->ipc_limits.reps = 3;
  o->ipc_limits.big_reps = 3;
  *help = false;
  for (int i = 1; i < argc; ++i) {
    const char* flag = argv[i];
    if (std::strcmp(flag, "--help") == 0 || std::strcmp(flag, "-h") == 0) {
      *help = true;
      return true;
    }
    if (std::strcmp(flag, "--self-test-corrupt") == 0) {
      o->self_test_corrupt = true;
      continue;
    }
    if (i + 1 >= argc) {
      *error = std::string(flag) + " needs a value (or is unknown)";
      return false;
    }
    const char* v = argv[++i];
    uint64_t n = 0;
    bool ok = true;
    if (std::strcmp(flag, "--ranks") == 0) {
      ok = ParseRanks(v, &o->ranks) && !o->ranks.empty();
    } else if (std::strcmp(flag, "--ipc-ranks") == 0) {
      ok = ParseRanks(v, &o->ipc_ranks);
    } else if (std::strcmp(flag, "--reps") == 0) {
      ok = ParseUint(v, &n) && n >= 1;
      o->limits.reps = static_cast<int>(n);
    } else if (std::strcmp(flag, "--big-reps") == 0) {
      ok = ParseUint(v, &n) && n >= 1;
      o->limits.big_reps = static_cast<int>(n);
    } else if (std::strcmp(flag, "--ipc-reps") == 0) {
      ok = ParseUint(v, &n) && n >= 1;
      o->ipc_limits.reps = o->ipc_limits.big_reps = static_cast<int>(n);
    } else if (std::strcmp(flag, "--big-bytes") == 0) {
      ok = ParseBytes(v, &o->limits.big_bytes);
    } else if (std::strcmp(flag, "--max-bytes") == 0) {
      ok = ParseBytes(v, &o->limits.max_bytes) && o->limits.max_bytes >= collectives::kPackBytes;
    } else if (std::strcmp(flag, "--force-other-max") == 0) {
      ok = ParseBytes(v, &o->limits.force_other_max);
    } else if (std::strcmp(flag, "--ipc-max-bytes") == 0) {
      ok = ParseBytes(v, &o->ipc_limits.max_bytes) &&
           o->ipc_limits.max_bytes >= collectives::kPackBytes;
      o->ipc_limits.force_other_max = o->ipc_limits.max_bytes;
    } else if (std::strcmp(flag, "--timeout-ms") == 0) {
      ok = ParseUint(v, &o->timeout_ms) && o->timeout_ms >= 1;
    } else if (std::strcmp(flag, "--stall-timeout-ms") == 0) {
      ok = ParseUint(v, &o->stall_timeout_ms);
    } else if (std::strcmp(flag, "--exchange-stall-timeout-ms") == 0) {
      ok = ParseUint(v, &o->exchange_stall_timeout_ms);
    } else if (std::strcmp(flag, "--copy-bytes") == 0) {
      ok = ParseBytes(v, &o->copy_bytes) && o->copy_bytes >= collectives::kPackBytes;
    } else if (std::strcmp(flag, "--wrap-after") == 0) {
      ok = ParseUint(v, &n) && n >= 1 && n < (1ull << 31);
      o->wrap_after = static_cast<uint32_t>(n);
    } else if (std::strcmp(flag, "--moe") == 0) {
      ok = std::strcmp(v, "on") == 0 || std::strcmp(v, "off") == 0;
      o->moe = std::strcmp(v, "on") == 0;
    } else if (std::strcmp(flag, "--moe-ranks") == 0) {
      ok = ParseRanks(v, &o->moe_ranks) && !o->moe_ranks.empty();
    } else if (std::strcmp(flag, "--seed") == 0) {
      ok = ParseUint(v, &o->seed);
    } else if (std::strcmp(flag, "--device") == 0) {
      ok = ParseUint(v, &n) && n < 1024;
      o->device = static_cast<int>(n);
    } else {
      *error = std::string("unknown option ") + flag;
      return false;
    }
    if (!ok) {
      *error = std::string("bad value for ") + flag + ": " + v;
      return false;
    }
  }
  return true;
}

}  // namespace ncclscope::gpu_check
