#include "collectives/numerics/numerics_twin.h"

#include <atomic>
#include <bit>
#include <cstring>

namespace ncclscope::collectives {
namespace {

// The words of the hash and the elements of the scan are little-endian, as on every GPU: a twin
// on a big-endian host would compute other values than the ranks it is compared with.
static_assert(std::endian::native == std::endian::little);

// Host memory as numerics_scan.h's Bytes (memcpy: the buffer may start anywhere).
struct HostBytes {
  const unsigned char* data;

  bool PackAligned() const { return reinterpret_cast<uintptr_t>(data) % 16 == 0; }

  void Pack(uint64_t k, uint64_t* lo, uint64_t* hi) const {
    std::memcpy(lo, data + 16 * k, 8);
    std::memcpy(hi, data + 16 * k + 8, 8);
  }

  uint64_t Run(uint64_t offset, uint32_t n) const {
    uint64_t v = 0;
    std::memcpy(&v, data + offset, n);
    return v;
  }
};

// Block b's partial: its threads' shares merged, as the kernel's block reduction does.
template <NumericFormat F>
NumericScanResult ScanBlock(const NumericScanArgs& a, uint64_t b, uint32_t threads, uint64_t grid) {
  HostBytes bytes{a.data};
  NumericScanResult block = EmptyScan();
  for (uint64_t t = 0; t < threads; ++t) {
    MergeScan(ScanThreadShare<F>(bytes, a.count, b * threads + t, grid), &block);
  }
  return block;
}

template <NumericFormat F>
void RunScan(const NumericScanArgs& a, uint32_t blocks, uint32_t threads) {
  const uint64_t grid = static_cast<uint64_t>(blocks) * threads;
  for (uint64_t b = 0; b < blocks; ++b) {
    const NumericScanResult part = ScanBlock<F>(a, b, threads, grid);
    // The kernel's thread 0: atomicAdd of each count, atomicMin of the first index.
    if (part.nan_count != 0) std::atomic_ref(a.result->nan_count).fetch_add(part.nan_count);
    if (part.inf_count != 0) std::atomic_ref(a.result->inf_count).fetch_add(part.inf_count);
    std::atomic_ref first(a.result->first_nonfinite);
    uint64_t seen = first.load();
    while (part.first_nonfinite < seen &&
           !first.compare_exchange_weak(seen, part.first_nonfinite)) {
    }
  }
}

}  // namespace

void RunNumericScanTwinKernel(NumericFormat f, const NumericScanArgs& args, uint32_t blocks,
                              uint32_t threads) noexcept {
  if (blocks == 0 || threads == 0) return;
  switch (f) {
    case NumericFormat::kFp16:
      return RunScan<NumericFormat::kFp16>(args, blocks, threads);
    case NumericFormat::kFp32:
      return RunScan<NumericFormat::kFp32>(args, blocks, threads);
    case NumericFormat::kFp64:
      return RunScan<NumericFormat::kFp64>(args, blocks, threads);
    case NumericFormat::kBf16:
      return RunScan<NumericFormat::kBf16>(args, blocks, threads);
    case NumericFormat::kFp8E4m3:
      return RunScan<NumericFormat::kFp8E4m3>(args, blocks, threads);
    case NumericFormat::kFp8E5m2:
      return RunScan<NumericFormat::kFp8E5m2>(args, blocks, threads);
    case NumericFormat::kInteger:
      return;
  }
}

void RunContentHashTwinKernel(const ContentHashArgs& args, uint32_t blocks,
                              uint32_t threads) noexcept {
  if (blocks == 0 || threads == 0) return;
  HostBytes bytes{args.data};
  const uint64_t grid = static_cast<uint64_t>(blocks) * threads;
  for (uint64_t b = 0; b < blocks; ++b) {
    uint64_t block = 0;
    for (uint64_t t = 0; t < threads; ++t) {
      block += HashThreadShare(bytes, args.length, b * threads + t, grid);
    }
    std::atomic_ref(args.result->sum).fetch_add(block);
  }
}

NumericScanResult ScanTwin(NumericFormat f, const void* data, uint64_t count, uint32_t blocks,
                           uint32_t threads) noexcept {
  NumericScanResult result = EmptyScan();
  RunNumericScanTwinKernel(f, {static_cast<const unsigned char*>(data), count, &result}, blocks,
                           threads);
  return result;
}

uint64_t ContentHashTwin(const void* data, uint64_t length, uint32_t blocks,
                         uint32_t threads) noexcept {
  ContentHashResult result{0};
  if (blocks == 0 || threads == 0) blocks = threads = 1;
  RunContentHashTwinKernel({static_cast<const unsigned char*>(data), length, &result}, blocks,
                           threads);
  return result.sum;
}

}  // namespace ncclscope::collectives
