// Turns an OpDesc into data flows over the communicator's rings. Every operation is expressed the
// same way: per peer, an ordered list of pieces this rank pushes, what it expects to receive, an
// optional reduction ("fold") of contributions in rank order, and local copies. Reductions use an
// owner scheme: rank r reduces segment r of the buffer from everyone's contributions in rank order
// 0..n-1 and sends the result back, so all ranks get bit-identical results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/emulator/op_desc.h"

namespace ncclsim {

struct OutPiece {
  uint32_t phase;  // 0: contribution to the receiver's fold, 1: data to copy
  const char* src;
  size_t elems;
  bool gated;   // src is this rank's fold result: push only what the fold has finished
  bool premul;  // multiply by the PreMulSum factor while pushing
};

struct OutFlow {
  int peer;
  uint64_t ticket;
  uint64_t sig;
  std::vector<OutPiece> pieces;
  size_t total;  // elements over all pieces
  size_t piece = 0, piece_off = 0, sent = 0;
  bool pushed = false;
  uint64_t end_head =
      0;  // ring head after our last chunk; done when the receiver's tail reaches it
  bool consumed = false;
  bool ring_full = false;  // the last push stopped on a full ring: the receiver gives no credit
};

struct InFlow {
  int peer;
  uint64_t ticket;
  uint64_t sig;
  size_t want0 = 0, want1 = 0;  // elements expected in phase 0 and phase 1
  char* dst1 = nullptr;         // phase-1 destination region
  size_t dst1_elems = 0;
  size_t got0 = 0, got1 = 0;
  bool done = false;
};

struct FoldPlan {
  bool active = false;
  char* dst = nullptr;  // receives the reduction of `elems` elements
  size_t elems = 0;
  const char* own_src = nullptr;  // this rank's contribution, copied into `own` when the op starts
  std::vector<char> own;
  size_t chunk = 0;  // chunk being reduced
  int next = 0;      // next rank to fold into that chunk
  size_t done_elems = 0;
};

struct LocalCopy {
  const char* src;
  char* dst;
  size_t bytes;
};

struct OpPlan {
  size_t elem_size = 1;  // 1 for Send/Recv, which move bytes whatever the dtype
  size_t chunk_elems = 0;
  double model_bytes = 0;  // size the transfer-time model charges
  std::vector<OutFlow> outs;
  std::vector<InFlow> ins;
  FoldPlan fold;
  std::vector<LocalCopy> copies;
  std::vector<char> send_copy;  // in-place AlltoAll: send data captured at start
  const char* send_copy_src = nullptr;
};

// Builds the plan and takes ring tickets in issue order. Caller holds desc.comm->issue_mu.
void buildPlan(const OpDesc& desc, OpPlan* plan);

}  // namespace ncclsim
