// Converts values between double and the bytes of every NCCL dtype, including the 16- and 8-bit
// floating formats the host has no type for. Used to fill send buffers and read results.
#pragma once

#include <nccl.h>

namespace ncclscope::sim {

// Thread-safe. encode rounds to nearest even (floats) or truncates toward zero (integers); the
// data pattern only produces values every dtype holds exactly, so rounding is never exercised
// there. decode handles every bit pattern (subnormals, inf, NaN) so wrong results print faithfully.
void encodeValue(double v, ncclDataType_t dtype, void* dst);
double decodeValue(const void* src, ncclDataType_t dtype);

// Distance from 1.0 to the next representable value (0 for integer dtypes).
double dtypeEpsilon(ncclDataType_t dtype);

}  // namespace ncclscope::sim
