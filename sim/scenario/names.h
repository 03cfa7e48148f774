// Names of the scenario vocabulary (ops, dtypes, reductions, faults) in both directions. The
// scenario file, error messages and the rank program's reports all use these spellings.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/scenario/scenario.h"

namespace ncclscope::sim {

// Thread-safe (constant tables). Parsers return nullopt for unknown names.
std::optional<OpKind> parseOpKind(std::string_view name);
std::string_view opKindName(OpKind kind);
std::string opKindChoices();

// Accepts NCCL's enum names (ncclFloat32, ncclHalf, ...) and the same without the prefix in any
// case (float32, half, bfloat16, ...).
std::optional<ncclDataType_t> parseDtype(std::string_view name);
std::string_view dtypeName(ncclDataType_t dtype);  // NCCL's canonical name, e.g. "ncclFloat32"
size_t dtypeSize(ncclDataType_t dtype);
bool dtypeIsFloat(ncclDataType_t dtype);

std::optional<RedOp> parseRedOp(std::string_view name);
std::string_view redOpName(RedOp op);
std::string redOpChoices();

std::optional<FaultKind> parseFaultKind(std::string_view name);
std::string_view faultKindName(FaultKind kind);
std::string faultKindChoices();

std::optional<CrashMode> parseCrashMode(std::string_view name);
std::string_view crashModeName(CrashMode mode);

// Ops addressed by one rank's data buffers (collectives) versus point-to-point pipelines.
bool opHasRoot(OpKind kind);
bool opReduces(OpKind kind);
// Issued as ncclSend/ncclRecv calls (pipeline, alltoallv), not as one NCCL collective.
bool opIsPointToPoint(OpKind kind);
// One NCCL collective call (allreduce .. scatter): what a coalesced op may hold.
bool opIsCollective(OpKind kind);

}  // namespace ncclscope::sim
