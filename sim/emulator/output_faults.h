// Silent output corruption of the emulated collectives (ncclsimFlipNextOutputBit): the armed flip
// is taken by the next collective call and applied by its OpRun when its output is final.
#pragma once

#include <cstdint>

#include "sim/emulator/op_desc.h"

namespace ncclsim {

// The armed bit for a collective being submitted now, disarming it; -1 when none is armed.
// Thread-safe.
int64_t takeArmedOutputFlip();

// Inverts bit d.flip_bit of the output d describes on this rank (no-op for -1); drops it with one
// warning when the rank has no output or the bit lies past its end. Called once, by the stream
// worker that completed the op, before the op is marked finished.
void applyOutputFlip(const OpDesc& d);

}  // namespace ncclsim
