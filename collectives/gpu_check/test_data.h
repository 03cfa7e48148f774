// The check's data: fresh random inputs for every run, the same on every process that asks for the
// same (seed, case, rep, rank), finite values only (a NaN's payload is not the same on a CPU and a
// GPU, and the comparison is bitwise), and the bitwise comparison that names the first difference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives/gpu_check/cases.h"

namespace ncclscope::gpu_check {

// What every output buffer is filled with before a run, so a byte the kernel never wrote shows.
inline constexpr unsigned char kPoison = 0xA5;

// Fills `bytes` of rank `rank`'s input for repetition `rep` of case number `case_index`:
// AllReduce: random signs, mantissas and exponents of the case's type, in a range whose sum over 8
// ranks stays finite in fp32 (fp16 may overflow when narrowed: +-inf on both sides alike);
// AlltoAll and the exchange: random bytes.
void FillInput(const Case& c, uint64_t seed, size_t case_index, int rep, int rank,
               unsigned char* out, size_t bytes);

// Empty when equal; else "byte 4093 (element 1023) is 0x3c, the CPU twin's 0x3d".
std::string FirstDifference(const Case& c, const unsigned char* got, const unsigned char* want,
                            size_t bytes);

}  // namespace ncclscope::gpu_check
