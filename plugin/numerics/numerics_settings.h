// What NCCLSCOPE_NUMERICS asks for (docs/collectives.md "Numerics in a job"): which
// passes run, how often, and on which communicators and operations. Parsed once at init from the
// config table's strings; read-only afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/record.h"

namespace ncclscope::plugin {

struct NumericsSettings {
  bool scan = false;     // "nan" or "all": NaN/Inf scan of the input before NCCL runs
  bool hash = false;     // "checksum" or "all": content hash of the output after NCCL ran
  uint64_t every = 1;    // sample one collective in `every` of each communicator (counted below)
  uint32_t op_mask = 0;  // bit (OpType value) of each collective sampled; all when no list given
  // Communicators sampled, by name or by id (hex as `ncclscope` prints it, with or without 0x);
  // empty: all of them.
  std::vector<std::string> comms;

  bool enabled() const { return scan || hash; }
  bool SamplesOp(trace::OpType op) const {
    const auto bit = static_cast<uint32_t>(op);
    return bit < 32 && (op_mask & (1u << bit)) != 0;
  }
  // Whether a communicator of this name and id is sampled. Cold path (once per communicator).
  bool SamplesComm(const std::string& name, uint64_t id) const;
};

// Reads mode ("off", "nan", "checksum", "all"; the config table has checked it), the period and
// the two comma-separated lists. An unknown operation name in `ops` adds one line to *warnings
// naming it and is ignored; a list whose every name is unknown samples no operation. Pure.
NumericsSettings ParseNumericsSettings(const std::string& mode, int64_t every,
                                       const std::string& ops, const std::string& comms,
                                       std::vector<std::string>* warnings);

}  // namespace ncclscope::plugin
