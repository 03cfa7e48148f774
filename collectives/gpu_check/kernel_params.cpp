#include "collectives/gpu_check/kernel_params.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

template <typename Args>
void FillCommon(const CommView& view, int rank, int nranks, const RankIo& io, uint32_t epoch,
                uint64_t timeout_ns, Args* a) {
  for (int q = 0; q < nranks; ++q) {
    a->source[q] = view.staging[q];
    a->signal[q] = view.signal[q];
  }
  a->input = io.input;
  a->staging = view.staging[rank];
  a->output = io.output;
  a->stall = io.stall;
  a->timeout_ns = timeout_ns;
  a->rank = rank;
  a->nranks = nranks;
  a->epoch = epoch;
  a->copy_in = 1;
}

}  // namespace

KernelParams MakeParams(const Case& c, const CommView& view, int rank, const RankIo& io,
                        uint32_t epoch, uint64_t timeout_ns) {
  KernelParams p;
  p.op = c.op;
  if (c.op == Op::kAlltoAll) {
    FillCommon(view, rank, c.nranks, io, epoch, timeout_ns, &p.alltoall);
    p.alltoall.packs_per_peer = c.packs;
  } else {
    FillCommon(view, rank, c.nranks, io, epoch, timeout_ns, &p.allreduce);
    for (int q = 0; q < c.nranks; ++q) p.allreduce.scratch[q] = view.scratch[q];
    p.allreduce.packs = c.packs;
  }
  return p;
}

void FillFlags(nc::Signal* s, uint32_t value) {
  // Every 32-bit word: whatever barriers the flags hold (padding included, which nothing reads).
  static_assert(sizeof(nc::Signal) % sizeof(uint32_t) == 0);
  auto* word = reinterpret_cast<uint32_t*>(s);
  for (size_t i = 0; i < sizeof(nc::Signal) / sizeof(uint32_t); ++i) word[i] = value;
}

}  // namespace ncclscope::gpu_check
