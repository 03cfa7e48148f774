// The `size` label of ncclscope_operation_duration_by_size_seconds: operation sizes (nccl-tests'
// convention, operation_size.h) in five classes a factor of 16 apart, bounded so that latency per
// size costs a handful of series per (comm, op) (docs/metrics.md, "Cardinality"). The class
// bounds are bounds of the size histogram too, so its buckets add up to the same classes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ncclscope::exporters {

// Label values, smallest class first. Their upper bounds: 64 KiB, 1 MiB, 16 MiB, 256 MiB, none.
inline constexpr const char* kSizeClasses[] = {"<=64KiB", "<=1MiB", "<=16MiB", "<=256MiB",
                                               ">256MiB"};
inline constexpr size_t kSizeClassCount = sizeof kSizeClasses / sizeof kSizeClasses[0];

// Index into kSizeClasses of an operation of `bytes` (a class includes its upper bound). Pure.
size_t SizeClassOf(uint64_t bytes);

}  // namespace ncclscope::exporters
