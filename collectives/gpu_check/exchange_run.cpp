#include "collectives/gpu_check/exchange_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "collectives/gpu_check/exchange_group.h"
#include "collectives/gpu_check/run_limits.h"
#include "collectives/gpu_check/test_data.h"
#include "collectives/twins/bounded_wait.h"
#include "collectives/twins/exchange_twin.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

using Matrix = std::vector<std::vector<uint32_t>>;

// Each pair's chunk counters as both of its ranks keep them (the interposer's sent_chunks and
// received_chunks), and how many chunks each pair moved in all (for the wrap count).
struct Counters {
  Matrix sent, received;  // [r][q]: chunks r sent q / took from q so far
  std::vector<std::vector<uint64_t>> moved;
  void Reset(int n, uint32_t value) {
    sent.assign(static_cast<size_t>(n), std::vector<uint32_t>(static_cast<size_t>(n), value));
    received = sent;
    if (moved.empty()) {
      moved.assign(static_cast<size_t>(n), std::vector<uint64_t>(static_cast<size_t>(n), 0));
    }
  }
};

// One shape of launch for every rank of a group: the plan's, with blocks_per_part lowered where
// the device could not hold every rank's grid at once.
struct Shape {
  uint32_t blocks_per_part;
  uint64_t slot_bytes;
};

// Every rank's registered memory as one rank maps it, and that rank's own side.
struct Side {
  unsigned char* const* staging;
  nc::Signal* const* signal;
  unsigned char* send;  // the rank's sendbuff (the parts' offsets are in it)
  unsigned char* recv;
  nc::KernelStall* stall;
};

nc::ExchangeKernelArgs ArgsOf(const ExchangeGroup& g, int r, const Shape& shape, const Side& side,
                              uint64_t timeout_ns, const Counters& before) {
  const ExchangeRank& me = g.rank[static_cast<size_t>(r)];
  nc::ExchangeKernelArgs a{};
  for (int q = 0; q < g.nranks; ++q) {
    a.staging[q] = side.staging[q];
    a.signal[q] = side.signal[q];
  }
  a.stall = side.stall;
  a.slot_bytes = shape.slot_bytes;
  a.sub_bytes = shape.slot_bytes / shape.blocks_per_part;
  a.timeout_ns = timeout_ns;
  a.rank = r;
  a.nranks = g.nranks;
  a.nparts = me.plan.nparts;
  a.blocks_per_part = shape.blocks_per_part;
  for (uint32_t i = 0; i < me.plan.nparts; ++i) {
    const size_t op = me.plan.part_op[i];
    const nc::ExchangeOp& o = me.ops[op];
    nc::ExchangePartArgs& p = a.part[i];
    p.user = (o.send ? side.send : side.recv) + me.offset[op];
    p.bytes = o.bytes;
    p.peer = o.peer;
    p.send = o.send ? 1 : 0;
    p.first_chunk = (o.send ? before.sent
                            : before.received)[static_cast<size_t>(r)][static_cast<size_t>(o.peer)];
  }
  return a;
}

// After a group: both sides of every pair count its chunks alike.
void Advance(const ExchangeGroup& g, uint64_t slot_bytes, Counters* c) {
  for (int s = 0; s < g.nranks; ++s) {
    for (int d = 0; d < g.nranks; ++d) {
      const size_t bytes = g.bytes[static_cast<size_t>(s)][static_cast<size_t>(d)];
      const auto chunks = static_cast<uint32_t>((bytes + slot_bytes - 1) / slot_bytes);
      c->sent[static_cast<size_t>(s)][static_cast<size_t>(d)] += chunks;
      c->received[static_cast<size_t>(d)][static_cast<size_t>(s)] += chunks;
      c->moved[static_cast<size_t>(s)][static_cast<size_t>(d)] += chunks;
    }
  }
}

void SetChunkFlags(nc::Signal* s, uint32_t value) {
  for (uint32_t b = 0; b < nc::kMaxBlocks; ++b) {
    for (int q = 0; q < nc::kMaxRanks; ++q) {
      *nc::FlagOf(s, b, nc::Barrier::kChunkReady, q) = value;
      *nc::FlagOf(s, b, nc::Barrier::kSlotFree, q) = value;
    }
  }
}

// The device ranks' exchange flags all at `value` (the other barriers' flags kept), stall records
// zeroed.
bool ResetDeviceFlags(const Driver& cu, const LocalRanks& l, uint32_t value) {
  auto s = std::make_unique<nc::Signal>();
  for (const DeviceRank& m : l.mem) {
    if (cu.memcpy_dtoh(s.get(), m.signal, sizeof(nc::Signal)) != CUDA_SUCCESS) return false;
    SetChunkFlags(s.get(), value);
    if (cu.memcpy_htod(m.signal, s.get(), sizeof(nc::Signal)) != CUDA_SUCCESS ||
        cu.memset_d8(m.stall, 0, sizeof(nc::KernelStall)) != CUDA_SUCCESS) {
      return false;
    }
  }
  return cu.ctx_synchronize() == CUDA_SUCCESS;
}

// The CPU twin's communicator: every rank's staging and flags in host memory.
struct TwinComm {
  std::vector<std::vector<unsigned char>> staging;
  std::vector<std::unique_ptr<nc::Signal>> signal;
  std::vector<unsigned char*> staging_ptr;
  std::vector<nc::Signal*> signal_ptr;
  TwinComm(int n, size_t staging_bytes) {
    for (int r = 0; r < n; ++r) {
      staging.emplace_back(staging_bytes);
      signal.push_back(std::make_unique<nc::Signal>());
      staging_ptr.push_back(staging.back().data());
      signal_ptr.push_back(signal.back().get());
    }
  }
  void Reset(uint32_t value) {
    for (auto& s : signal) SetChunkFlags(s.get(), value);
  }
};

// Runs the twin of every rank on its own thread; empty when all finished, else what stalled.
std::string RunTwin(const ExchangeGroup& g, const Shape& shape, TwinComm& comm,
                    std::vector<std::vector<unsigned char>>& in,
                    std::vector<std::vector<unsigned char>>& out, const Counters& before) {
  const int n = g.nranks;
  std::vector<nc::Stall> stalls(static_cast<size_t>(n));
  std::vector<int> done(static_cast<size_t>(n), 0);
  std::vector<std::thread> threads;
  const int64_t deadline = nc::MonotonicNs() + static_cast<int64_t>(kTwinTimeoutNs);
  for (int r = 0; r < n; ++r) {
    const Side side{comm.staging_ptr.data(), comm.signal_ptr.data(),
                    in[static_cast<size_t>(r)].data(), out[static_cast<size_t>(r)].data(), nullptr};
    const nc::ExchangeKernelArgs a = ArgsOf(g, r, shape, side, 0, before);
    threads.emplace_back([&, a, r] {
      done[static_cast<size_t>(r)] =
          nc::RunExchangeTwin(a, deadline, &stalls[static_cast<size_t>(r)]) ? 1 : 0;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    if (done[static_cast<size_t>(r)] != 0) continue;
    const nc::Stall& s = stalls[static_cast<size_t>(r)];
    char text[160];
    nc::DescribeStall(s, text, sizeof(text));
    return std::string("the CPU twin stalled: ") + text;
  }
  return "";
}

// What rank d's recvbuff must hold: what each sender sent, poison between the parts.
std::vector<unsigned char> Expected(const ExchangeGroup& g, int d,
                                    const std::vector<std::vector<unsigned char>>& in) {
  const ExchangeRank& me = g.rank[static_cast<size_t>(d)];
  std::vector<unsigned char> want(me.recv_extent, kPoison);
  for (size_t i = 0; i < me.ops.size(); ++i) {
    const nc::ExchangeOp& recv = me.ops[i];
    if (recv.send) continue;
    const ExchangeRank& from = g.rank[static_cast<size_t>(recv.peer)];
    for (size_t j = 0; j < from.ops.size(); ++j) {
      if (!from.ops[j].send || from.ops[j].peer != d) continue;
      const unsigned char* sent = in[static_cast<size_t>(recv.peer)].data() + from.offset[j];
      std::copy(sent, sent + recv.bytes, want.begin() + static_cast<ptrdiff_t>(me.offset[i]));
    }
  }
  return want;
}

// Empty when equal; else where the first wrong byte is, `who` first: "rank 3: byte 70 of its
// recvbuff (byte 52 of the 4096-byte part from rank 1, at offset 18) is 0xa5, rank 1 sent 0x3c".
std::string Difference(const ExchangeGroup& g, int d, const unsigned char* got,
                       const std::vector<unsigned char>& want, const char* who) {
  size_t i = 0;
  while (i < want.size() && got[i] == want[i]) ++i;
  if (i == want.size()) return "";
  const ExchangeRank& me = g.rank[static_cast<size_t>(d)];
  char line[256];
  for (size_t k = 0; k < me.ops.size(); ++k) {
    const nc::ExchangeOp& o = me.ops[k];
    if (o.send || i < me.offset[k] || i >= me.offset[k] + o.bytes) continue;
    std::snprintf(line, sizeof(line),
                  "%srank %d: byte %zu of its recvbuff (byte %zu of the %zu-byte part from rank "
                  "%d, at offset %zu) is 0x%02x, rank %d sent 0x%02x",
                  who, d, i, i - me.offset[k], o.bytes, o.peer, me.offset[k], got[i], o.peer,
                  want[i]);
    return line;
  }
  std::snprintf(line, sizeof(line),
                "%srank %d: byte %zu of its recvbuff, between parts, is 0x%02x instead of the "
                "poison 0x%02x",
                who, d, i, got[i], want[i]);
  return line;
}

struct ExchangeRun {
  RankCountRun& run;
  LocalRanks& ranks;
  size_t bytes;
  Counters counters;
  TwinComm twin;
  int launches = 0;
  int parts = 0;  // of every rank in every group, once per group
  int unaligned_parts = 0;
};

// The device side of every rank; send and recv are the ranks' input and output buffers.
std::vector<nc::ExchangeKernelArgs> DeviceArgs(ExchangeRun& x, const ExchangeGroup& g,
                                               const Shape& shape, uint64_t timeout_ns) {
  std::vector<nc::ExchangeKernelArgs> args;
  for (int r = 0; r < g.nranks; ++r) {
    const DeviceRank& m = x.ranks.mem[static_cast<size_t>(r)];
    const Side side{
        x.ranks.view.staging, x.ranks.view.signal, reinterpret_cast<unsigned char*>(m.input),
        reinterpret_cast<unsigned char*>(m.output), reinterpret_cast<nc::KernelStall*>(m.stall)};
    args.push_back(ArgsOf(g, r, shape, side, timeout_ns, x.counters));
  }
  return args;
}

// Uploads each rank's sendbuff, poisons its recvbuff, launches every rank but `absent`.
LaunchOutcome Launch(ExchangeRun& x, const ExchangeGroup& g, const Shape& shape,
                     const std::vector<std::vector<unsigned char>>& in, uint64_t timeout_ns,
                     int absent) {
  const Driver& cu = x.run.cu;
  LaunchOutcome out;
  for (int r = 0; r < g.nranks; ++r) {
    const DeviceRank& m = x.ranks.mem[static_cast<size_t>(r)];
    const ExchangeRank& me = g.rank[static_cast<size_t>(r)];
    // A rank with no send (no receive) has an empty buffer: no transfer of 0 bytes.
    CUresult res = CUDA_SUCCESS;
    if (me.send_extent > 0) {
      res = cu.memcpy_htod(m.input, in[static_cast<size_t>(r)].data(), me.send_extent);
    }
    if (res == CUDA_SUCCESS && me.recv_extent > 0) {
      res = cu.memset_d8(m.output, kPoison, me.recv_extent);
    }
    if (res == CUDA_SUCCESS) continue;
    out.error = "uploading rank " + std::to_string(r) + "'s sendbuff: " + ErrorText(cu, res);
    return out;
  }
  if (CUresult res = cu.ctx_synchronize(); res != CUDA_SUCCESS) {
    out.error = "cuCtxSynchronize: " + ErrorText(cu, res);
    return out;
  }
  std::vector<nc::ExchangeKernelArgs> args = DeviceArgs(x, g, shape, timeout_ns);
  std::vector<RankLaunch> launches;
  for (int r = 0; r < g.nranks; ++r) {
    launches.push_back(RankLaunch{
        x.run.kernels.exchange, args[static_cast<size_t>(r)].nparts * shape.blocks_per_part,
        g.rank[static_cast<size_t>(r)].plan.threads, &args[static_cast<size_t>(r)]});
  }
  ++x.launches;
  return LaunchRanks(cu, x.ranks, launches.data(), timeout_ns, absent);
}

// The plan's shape, blocks_per_part halved while every rank's grid together would not fit.
Shape ShapeFor(const RankCountRun& run, const ExchangeGroup& g) {
  // Every rank with a part has the same shape (the table's row); one without launches nothing.
  const auto with_parts = std::find_if(g.rank.begin(), g.rank.end(),
                                       [](const ExchangeRank& r) { return r.plan.nparts > 0; });
  const nc::ExchangePlan& plan = (with_parts != g.rank.end() ? *with_parts : g.rank.front()).plan;
  Shape s{plan.blocks_per_part, plan.slot_bytes};
  int regs = 0;
  const int capacity = DeviceCapacity(run.cu, run.facts, run.kernels.exchange, plan.threads, &regs);
  uint64_t parts = 0;
  for (const ExchangeRank& r : g.rank) parts += r.plan.nparts;
  while (capacity > 0 && parts * s.blocks_per_part > static_cast<uint64_t>(capacity) &&
         s.blocks_per_part > 1 && s.slot_bytes % (s.blocks_per_part / 2 * nc::kPackBytes) == 0) {
    s.blocks_per_part /= 2;
  }
  return s;
}

// One case: its group, c.reps times. False on a hang.
bool RunGroup(ExchangeRun& x, Case c) {
  RankCountRun& run = x.run;
  const int n = x.ranks.nranks;
  CaseResult result;
  ExchangeGroup g;
  std::string error;
  if (!BuildExchangeGroup(c, run.facts.gpu, x.bytes, run.o.seed, &g, &error)) {
    std::printf("FAIL %d ranks, %s: %s\n", n, CaseName(c).c_str(), error.c_str());
    ++run.failures;
    result.c = c;
    result.wrong = 1;
    run.summary->cases.push_back(result);
    return true;
  }
  const Shape shape = ShapeFor(run, g);
  c.blocks = shape.blocks_per_part;
  for (const ExchangeRank& r : g.rank) {
    x.parts += static_cast<int>(r.ops.size());
    for (size_t at : r.offset) x.unaligned_parts += at % nc::kPackBytes != 0 ? 1 : 0;
  }
  result.c = c;
  const size_t index = (*run.case_index)++;
  std::vector<std::vector<unsigned char>> in, dev_out, twin_out;
  for (const ExchangeRank& r : g.rank) {
    in.emplace_back(r.send_extent);
    dev_out.emplace_back(r.recv_extent);
    twin_out.emplace_back(r.recv_extent);
  }
  for (int rep = 0; rep < c.reps; ++rep) {
    for (int r = 0; r < n; ++r) {
      FillInput(c, run.o.seed, index, rep, r, in[static_cast<size_t>(r)].data(),
                in[static_cast<size_t>(r)].size());
      std::fill(twin_out[static_cast<size_t>(r)].begin(), twin_out[static_cast<size_t>(r)].end(),
                kPoison);
    }
    const uint32_t first = x.counters.sent[0][1];
    const LaunchOutcome out = Launch(x, g, shape, in, run.o.timeout_ms * kMsToNs, -1);
    ++result.runs;
    if (out.hang) {
      std::printf("HANG %d ranks, %s, run %d: %s\n", n, CaseName(c).c_str(), rep,
                  out.error.c_str());
      return false;
    }
    std::string wrong = out.error;
    for (int r = 0; r < n && wrong.empty(); ++r) {
      if (out.stalls[static_cast<size_t>(r)].code != 0) {
        wrong = "a healthy run stalled: " + StallText(out.stalls[static_cast<size_t>(r)]) +
                " (are all ranks' blocks co-resident?)";
      }
    }
    if (wrong.empty()) wrong = RunTwin(g, shape, x.twin, in, twin_out, x.counters);
    for (int d = 0; d < n && wrong.empty(); ++d) {
      auto& got = dev_out[static_cast<size_t>(d)];
      if (!got.empty() && !DownloadOutput(run.cu, x.ranks, d, got.size(), got.data())) {
        wrong = "downloading rank " + std::to_string(d) + "'s recvbuff failed";
        break;
      }
      const std::vector<unsigned char> want = Expected(g, d, in);
      if (run.o.self_test_corrupt && !run.exchange_corrupted) {
        // Byte 1 of the rank's first receive: the comparison below must name it and its sender.
        const ExchangeRank& me = g.rank[static_cast<size_t>(d)];
        for (size_t k = 0; k < me.ops.size() && !run.exchange_corrupted; ++k) {
          if (me.ops[k].send) continue;
          got[me.offset[k] + 1] ^= 0x01;
          run.exchange_corrupted = true;
        }
      }
      wrong = Difference(g, d, got.data(), want, "");
      if (wrong.empty()) {
        wrong = Difference(g, d, twin_out[static_cast<size_t>(d)].data(), want, "CPU twin, ");
      }
    }
    if (wrong.empty()) {
      Advance(g, shape.slot_bytes, &x.counters);
    } else {
      // The flags of the pairs disagree now: start the next group from one value everywhere.
      x.counters.Reset(n, kChunkCounterStart);
      x.twin.Reset(kChunkCounterStart);
      ResetDeviceFlags(run.cu, x.ranks, kChunkCounterStart);
      ++result.wrong;
      ++run.failures;
      if (result.wrong == 1) {
        std::printf("WRONG %d ranks, %s, %zu bytes, run %d (chunk counter of pair 0->1 %#x): %s\n",
                    n, CaseName(c).c_str(), c.bytes, rep, first, wrong.c_str());
      }
      continue;
    }
    result.launch_us.insert(result.launch_us.end(), out.launch_us.begin(), out.launch_us.end());
    result.kernel_us.push_back(out.last_rank_kernel_us);
  }
  run.summary->cases.push_back(result);
  return true;
}

// The last rank never launches; every other rank's kernel must return, its stall naming it at
// the chunk-ready or slot-free flag of the pair, one chunk past where the counters stand.
bool CheckAbsentRank(ExchangeRun& x) {
  RankCountRun& run = x.run;
  const int n = x.ranks.nranks, absent = n - 1;
  x.counters.Reset(n, kChunkCounterStart);
  ExchangeGroup g;
  std::string error;
  bool ok = ResetDeviceFlags(run.cu, x.ranks, kChunkCounterStart);
  if (!ok) error = "resetting the flags failed";
  if (ok) ok = BuildAbsentExchangeGroup(run.facts.gpu, n, absent, x.bytes, &g, &error);
  LaunchOutcome out;
  int named = 0;
  if (ok) {
    std::vector<std::vector<unsigned char>> in;
    for (const ExchangeRank& r : g.rank) in.emplace_back(r.send_extent, 0x5A);
    out = Launch(x, g, ShapeFor(run, g), in, run.o.exchange_stall_timeout_ms * kMsToNs, absent);
    if (out.hang) {
      std::printf(
          "HANG %d ranks, exchange, absent rank %d: %s: the bounded wait did not end a "
          "kernel\n",
          n, absent, out.error.c_str());
      return false;
    }
    error = out.error;
  }
  for (int r = 0; r < absent && ok && error.empty(); ++r) {
    const nc::KernelStall& k = out.stalls[static_cast<size_t>(r)];
    const bool right = k.code == 1 && k.rank == r && k.peer == absent &&
                       (k.barrier == static_cast<uint32_t>(nc::Barrier::kChunkReady) ||
                        k.barrier == static_cast<uint32_t>(nc::Barrier::kSlotFree)) &&
                       k.seen == kChunkCounterStart && k.want == kChunkCounterStart + 1;
    std::printf("  absent rank %d, exchange: %s%s\n", absent,
                k.code != 0 ? StallText(k).c_str() : "no stall reported by rank ",
                k.code != 0 ? (right ? "" : "  <- WRONG") : std::to_string(r).c_str());
    named += right ? 1 : 0;
  }
  ok = ok && error.empty() && named == absent;
  if (!ok) ++run.failures;
  run.summary->notes.push_back(
      "(a) " + std::to_string(n) + " ranks, rank " + std::to_string(absent) +
      " never launched its exchange: " +
      (ok ? "all " + std::to_string(absent) + " others returned and named it"
          : "FAILED (" +
                (error.empty()
                     ? std::to_string(named) + " of " + std::to_string(absent) + " named it"
                     : error) +
                ")"));
  ResetDeviceFlags(run.cu, x.ranks, kChunkCounterStart);
  return true;
}

}  // namespace

bool RunExchange(RankCountRun& run, LocalRanks& ranks, size_t bytes) {
  const int n = ranks.nranks;
  ExchangeRun x{run, ranks, bytes, Counters{}, TwinComm(n, bytes)};
  x.counters.Reset(n, kChunkCounterStart);
  x.twin.Reset(kChunkCounterStart);
  if (!ResetDeviceFlags(run.cu, ranks, kChunkCounterStart)) {
    std::printf("FAIL %d ranks, exchange: writing the flags failed\n", n);
    ++run.failures;
    return true;
  }
  const std::vector<Case> cases = BuildExchangeCases(run.facts.gpu, n, run.o.limits);
  const auto started = std::chrono::steady_clock::now();
  for (const Case& c : cases) {
    if (!RunGroup(x, c)) return false;
  }
  int pairs = 0, wrapped = 0;
  for (const auto& from : x.counters.moved) {
    for (uint64_t chunks : from) {
      pairs += chunks > 0 ? 1 : 0;
      wrapped += chunks > uint64_t{0xFFFFFFFFu - kChunkCounterStart} ? 1 : 0;
    }
  }
  std::printf(
      "(a) %d ranks, exchange: %zu groups, %d launches, chunk counters from %#x: %d of %d "
      "pairs wrapped, %d parts (%d not 16-byte aligned), %.1f s\n",
      n, cases.size(), x.launches, kChunkCounterStart, wrapped, pairs, x.parts, x.unaligned_parts,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  std::fflush(stdout);
  if (run.o.stall_timeout_ms > 0 && run.o.exchange_stall_timeout_ms > 0) {
    return CheckAbsentRank(x);
  }
  return true;
}

}  // namespace ncclscope::gpu_check
