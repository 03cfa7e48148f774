// Element-wise arithmetic of the emulated collectives on every ncclDataType_t. Narrow floats are
// widened to double, combined, and rounded once per operation (what a correctly rounded native op
// gives); integers wrap around like the GPU's. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include <nccl.h>

namespace ncclsim {

enum class RedKind : uint8_t { kSum, kProd, kMax, kMin, kAvg, kPreMulSum };

// Bytes per element; 0 for a value outside ncclDataType_t.
size_t dtypeSize(int dtype);

// dst[i] = dst[i] (op) src[i] for i < n. kAvg and kPreMulSum combine as a sum.
void foldInto(void* dst, const void* src, size_t n, ncclDataType_t dt, RedKind kind);

// dst[i] = src[i] * scalar, where scalar points to one element of type dt. dst may equal src.
void scaleCopy(void* dst, const void* src, size_t n, ncclDataType_t dt, const void* scalar);

// dst[i] /= divisor (integer division for integer types), the last step of ncclAvg.
void divideBy(void* dst, size_t n, ncclDataType_t dt, int divisor);

// Element i of buf as a double (for checks and diagnostics).
double loadAsDouble(const void* buf, size_t i, ncclDataType_t dt);

// Stores v (rounded / converted as the type requires) into element i of buf.
void storeFromDouble(void* buf, size_t i, ncclDataType_t dt, double v);

}  // namespace ncclsim
