/* ncclscope's MoE dispatch and combine for one node (docs/collectives.md, "MoE dispatch/combine"):
 * the C API for frameworks that call them directly.
 *
 * Dispatch: every rank has `num_tokens` token rows of `hidden` elements and a top-k routing table
 * (for each token, `top_k` global expert indices, -1 = slot unused). The `num_experts` experts are
 * split evenly over the ranks: rank r owns experts [r * L, (r + 1) * L), L = num_experts / nranks.
 * After dispatch each rank holds the rows routed to its experts in `recv_x`, grouped by local
 * expert (all rows of local expert 0, then of 1, ...), with per-expert counts, and for every row
 * its source (rank, token, k slot). Within one expert the rows are ordered by source rank, then
 * token, then k slot: the layout depends only on the routing tables, never on timing.
 *
 * Combine: every rank hands back its experts' outputs, one row per received row in the same order,
 * and each source token receives sum over its k slots of weight[t][k] * output row, weights given
 * at combine (float32, the routing table's shape), accumulated in float32 in k order 0, 1, ...
 * (fused multiply-add) and rounded once to the data type (round to nearest even): the result is
 * bitwise the same on every run and on the CPU twin. A token with no used slot gets zeros.
 * That reads one row per used slot over the links. config.combine = NCCLSCOPE_MOE_COMBINE_RANK_SUMS
 * reads one per (token, expert rank) instead, as DeepEP's high-throughput combine moves them: each
 * expert rank sums its own slots of a token (float32 fused multiply-adds in k order from 0) and
 * rounds that sum to the data type; the token's rank adds those sums in float32, in the order of
 * each rank's first slot, from 0, and rounds again. Rounded twice, so it may differ from the exact
 * combine in the last bits; still bitwise the same on every run and on the CPU twin. It needs a
 * third grid-wide barrier (the weights are given at combine, on the token's rank).
 *
 * How it is called. This API owns no memory and does no CUDA set-up; the framework:
 *   1. fills an ncclscope_moe_config (the same on every rank) and calls ncclscope_moe_plan_make;
 *   2. allocates on every rank one buffer of plan.buffer_bytes in device memory every rank of the
 *      node can map (cudaMalloc + cudaIpcGetMemHandle / cuMem with exportable handles), zeroes it,
 *      exchanges the handles by its own means and opens the peers' (CUDA IPC): the "registered
 *      buffer" of this API;
 *   3. loads the device code (ncclscope_moe_fatbin, cuModuleLoadData), looks up
 *      NCCLSCOPE_MOE_DISPATCH_KERNEL and NCCLSCOPE_MOE_COMBINE_KERNEL (cuModuleGetFunction) and
 *      launches them with cuLaunchKernel: grid plan.blocks x 1 x 1, block plan.threads x 1 x 1, no
 *      dynamic shared memory, one by-value parameter (the args struct: kernelParams = {&args});
 *   4. reads the call's ncclscope_moe_status after the stream has passed the kernel.
 * Without a GPU the same calls run on the CPU (ncclscope_moe_dispatch_on_cpu/_combine_on_cpu),
 * each rank on its own thread or process over memory they all map; the kernels have never run on a
 * GPU (no GPU has been lent to this work yet).
 *
 * Ordering (as NCCL's operations on one communicator): every rank makes the same sequence of calls
 * on one registered buffer (dispatch and combine in any interleaving, e.g. dispatch, dispatch,
 * combine, combine for two micro-batches), one at a time on each rank (one stream, or streams
 * ordered by events), each with the next epoch. Calls on different registered buffers are
 * independent. With NCCLSCOPE_MOE_DEVICE_EPOCH in args.flags a call takes the next epoch from the
 * registered buffer itself (every call, host or device epoch, leaves its epoch there): the same
 * launch replayed by a captured CUDA graph then counts on by itself. Host and device epochs may
 * alternate on one buffer. A call whose epoch is not the one after the buffer's last is refused
 * (NCCLSCOPE_MOE_STALE_EPOCH) rather than run against flags it has already passed. After a call
 * that timed out, zero the buffer again. A kernel waits for
 * its peers' kernels of the same call: the ranks' kernels of one call must be able to run at the
 * same time (one GPU each, or as many co-resident grids).
 *
 * Units: tokens and rows are counted in rows, `hidden` in elements, sizes in bytes, time in ns.
 * Layouts are row-major and dense: element h of token t lies at t * hidden + h; slot k of token t
 * of a [num_tokens][top_k] table at t * top_k + k. The kernels move rows in 16-byte packs: row
 * arrays (x, recv_x, expert_out, out) must be 16-byte aligned and registered buffers 128-byte
 * aligned (cudaMalloc's 256-byte alignment is both).
 *
 * Receive capacity: config.recv_capacity bounds the rows one rank may receive in one dispatch
 * (recv_x, recv_src). 0 means nranks * max_tokens * top_k, which no routing can exceed. A dispatch
 * that would give any rank more rows fails on every rank with NCCLSCOPE_MOE_RECV_OVERFLOW (the
 * rank and the rows it needed in the status); the overflowing rank writes no row, nothing is ever
 * silently dropped. Its recv_counts still hold what each local expert would have received.
 *
 * Errors: a call's data errors are reported in its ncclscope_moe_status, the same on every rank
 * (the first by rank, then by the order in which that rank found them); outputs are then undefined
 * and combine must not be called with that dispatch's outputs. A wait on a peer that never arrives
 * ends after args.timeout_ns with NCCLSCOPE_MOE_TIMEOUT in the status and who waited for whom
 * where in args.stall. Host functions return an ncclscope_moe_result and never abort.
 *
 * Thread safety: every host function is pure or touches only what its arguments point to; the
 * _on_cpu functions of different ranks run concurrently by design. No function keeps a pointer.
 */
#ifndef NCCLSCOPE_MOE_H_
#define NCCLSCOPE_MOE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits ---- */
#define NCCLSCOPE_MOE_MAX_RANKS 8      /* one node */
#define NCCLSCOPE_MOE_MAX_EXPERTS 1024 /* num_experts over all ranks */
#define NCCLSCOPE_MOE_MAX_TOP_K 32
#define NCCLSCOPE_MOE_MAX_BLOCKS 64

/* args.flags: the call's epoch is the one after the last call's on this registered buffer, read
 * from the buffer by the kernel (CUDA-graph replay). */
#define NCCLSCOPE_MOE_DEVICE_EPOCH 1

/* The kernels' entry points in the fatbin. */
#define NCCLSCOPE_MOE_DISPATCH_KERNEL "ncclscope_moe_dispatch"
#define NCCLSCOPE_MOE_COMBINE_KERNEL "ncclscope_moe_combine"

/* Element types of token rows, with NCCL's ncclDataType_t numbers. */
typedef enum ncclscope_moe_dtype {
  NCCLSCOPE_MOE_FP16 = 6,
  NCCLSCOPE_MOE_FP32 = 7,
  NCCLSCOPE_MOE_BF16 = 9
} ncclscope_moe_dtype;

/* How combine reduces a token's slots (see above). */
typedef enum ncclscope_moe_combine_mode {
  NCCLSCOPE_MOE_COMBINE_EXACT = 0,    /* a row per used slot, rounded once */
  NCCLSCOPE_MOE_COMBINE_RANK_SUMS = 1 /* a row per (token, expert rank), rounded twice */
} ncclscope_moe_combine_mode;

/* What host functions return, and the codes of a call's ncclscope_moe_status. */
typedef enum ncclscope_moe_result {
  NCCLSCOPE_MOE_OK = 0,
  NCCLSCOPE_MOE_INVALID_ARGUMENT = 1, /* a config value or an args field out of range */
  NCCLSCOPE_MOE_TOO_MANY_TOKENS = 2,  /* num_tokens < 0 or > max_tokens (detail: num_tokens) */
  NCCLSCOPE_MOE_BAD_EXPERT = 3,       /* a routing entry < -1 or >= num_experts (detail: token);
                                         the entry is treated as -1 */
  NCCLSCOPE_MOE_RECV_OVERFLOW = 4,    /* a rank would receive more than recv_capacity rows
                                         (detail: the rows it needed) */
  NCCLSCOPE_MOE_BAD_HANDLE = 5,       /* combine: recv_counts or send_rows are not what a
                                         successful dispatch wrote (detail: token, or -1) */
  NCCLSCOPE_MOE_TIMEOUT = 6,          /* a wait on a peer expired (rank: the waiting rank,
                                         detail: the rank it waited for; more in args.stall) */
  NCCLSCOPE_MOE_STALE_EPOCH = 7       /* this rank's call is not the one after the buffer's last
                                         (args.epoch repeats or skips one: a replayed launch
                                         without NCCLSCOPE_MOE_DEVICE_EPOCH); the call touched
                                         nothing and its peers' waits expire naming this rank
                                         (detail: the epoch the buffer expected) */
} ncclscope_moe_result;

/* Fixed for the life of a registered buffer; the same on every rank. */
typedef struct ncclscope_moe_config {
  int32_t nranks;        /* ranks of the node taking part, 2..8 */
  int32_t num_experts;   /* a multiple of nranks, at most NCCLSCOPE_MOE_MAX_EXPERTS */
  int32_t top_k;         /* routing slots per token, 1..NCCLSCOPE_MOE_MAX_TOP_K */
  int32_t hidden;        /* elements per token row; hidden x element size a multiple of 16 bytes */
  int32_t dtype;         /* ncclscope_moe_dtype */
  int32_t max_tokens;    /* the most tokens one rank passes to one call, >= 1 */
  int32_t recv_capacity; /* the most rows one rank receives in one dispatch; 0: the worst case */
  int32_t blocks;        /* 0: default (32); else 1..NCCLSCOPE_MOE_MAX_BLOCKS */
  int32_t threads;       /* 0: default (512); else a multiple of 32 in 64..1024 */
  int32_t combine;       /* ncclscope_moe_combine_mode; 0: NCCLSCOPE_MOE_COMBINE_EXACT */
} ncclscope_moe_config;

/* Derived by ncclscope_moe_plan_make; copied into every call's args unchanged. The buffer_* fields
 * are byte offsets into the registered buffer. */
typedef struct ncclscope_moe_plan {
  ncclscope_moe_config config; /* with defaults filled in */
  int32_t local_experts;       /* num_experts / nranks */
  int32_t element_bytes;
  int64_t row_bytes;        /* hidden x element size */
  int64_t buffer_bytes;     /* bytes of the registered buffer every rank allocates */
  int64_t buffer_signal;    /* the flags of the barriers */
  int64_t buffer_header;    /* two per-call headers (by epoch parity): token count, rows, errors */
  int64_t buffer_counts;    /* [num_experts][blocks] int32: rows per (expert, token chunk) */
  int64_t buffer_topk;      /* [max_tokens][top_k] int32: the routing table, copied in */
  int64_t buffer_slot;      /* [max_tokens][top_k] int32: each entry's place in its chunk */
  int64_t buffer_send_rows; /* [max_tokens][top_k] int32: rows the receivers chose */
  int64_t buffer_rows;      /* [max(max_tokens, recv_capacity)][hidden]: token or expert rows */
  int64_t buffer_weights;   /* [max_tokens][top_k] float: combine's weights (rank sums) */
  int64_t buffer_epoch;     /* uint32: the epoch of the last call on this buffer */
} ncclscope_moe_plan;

/* Where a received row came from. */
typedef struct ncclscope_moe_source {
  int32_t rank;
  int32_t token; /* row index in that rank's x */
  int32_t k;     /* routing slot */
} ncclscope_moe_source;

/* A call's outcome, written once per call by the kernel (block 0) or the CPU twin. */
typedef struct ncclscope_moe_status {
  int32_t code;   /* ncclscope_moe_result */
  int32_t rank;   /* the rank that found it, -1 when none */
  int32_t detail; /* see ncclscope_moe_result */
} ncclscope_moe_status;

/* The first expired wait of a call (the layout of the other kernels' stall record): `code` is 0
 * until a wait expires; the caller zeroes it before the call and reads it after. */
typedef struct ncclscope_moe_stall {
  int32_t code; /* 0: none; 1: a wait expired */
  int32_t rank; /* the waiting rank */
  int32_t peer; /* the rank whose flag never came */
  uint32_t block;
  uint32_t barrier; /* 0 start, 1 middle (combine's rank sums), 2 end */
  uint32_t want;    /* the call's epoch */
  uint32_t seen;    /* what the flag held */
} ncclscope_moe_stall;

/* Fields every call takes. Device pointers on a GPU; on the CPU, memory of this process. */
typedef struct ncclscope_moe_common_args {
  ncclscope_moe_plan plan;
  void* buffer[NCCLSCOPE_MOE_MAX_RANKS]; /* every rank's registered buffer as mapped here (its own
                                             at [rank]); read and written by the call */
  ncclscope_moe_status* status;          /* written by the call; required */
  ncclscope_moe_stall* stall;            /* optional (NULL) */
  uint64_t timeout_ns; /* every wait ends this long after the call starts (10 min advised) */
  int32_t rank;
  uint32_t epoch;     /* 1 for the first call on a zeroed buffer, then +1 per call (wraps);
                         ignored with NCCLSCOPE_MOE_DEVICE_EPOCH */
  int32_t num_tokens; /* this rank's tokens: 0..max_tokens, may differ between ranks */
  int32_t flags;      /* 0 or NCCLSCOPE_MOE_DEVICE_EPOCH */
} ncclscope_moe_common_args;

/* Dispatch. Inputs are read only; outputs must not overlap inputs or the registered buffer.
 * x, topk_idx and send_rows may be NULL when num_tokens is 0. */
typedef struct ncclscope_moe_dispatch_args {
  ncclscope_moe_common_args common;
  const void* x;           /* in  [num_tokens][hidden] dtype */
  const int32_t* topk_idx; /* in  [num_tokens][top_k]: global expert or -1 */
  void* recv_x;            /* out [recv_capacity][hidden] dtype: rows [0, sum of recv_counts) */
  ncclscope_moe_source* recv_src; /* out [recv_capacity]: the source of each row of recv_x */
  int32_t* recv_counts;           /* out [local_experts]: rows per local expert, in recv_x order */
  int32_t* send_rows;             /* out [num_tokens][top_k]: the row of recv_x on the expert's rank
                                     that each entry went to, -1 for an unused entry; combine's handle */
} ncclscope_moe_dispatch_args;

/* Combine, with the outputs of the dispatch whose rows it returns. num_tokens must be that
 * dispatch's. Inputs are read only; `out` must not overlap them or the registered buffer.
 * topk_idx, send_rows, topk_weights and out may be NULL when num_tokens is 0, expert_out when
 * recv_counts sum to 0. */
typedef struct ncclscope_moe_combine_args {
  ncclscope_moe_common_args common;
  const void* expert_out;     /* in  [sum of recv_counts][hidden] dtype, in recv_x's order */
  const int32_t* recv_counts; /* in  [local_experts]: the dispatch's */
  const int32_t* topk_idx;    /* in  [num_tokens][top_k]: the dispatch's */
  const int32_t* send_rows;   /* in  [num_tokens][top_k]: the dispatch's */
  const float* topk_weights;  /* in  [num_tokens][top_k] */
  void* out;                  /* out [num_tokens][hidden] dtype */
} ncclscope_moe_combine_args;

/* Checks `config` and derives the plan. NCCLSCOPE_MOE_INVALID_ARGUMENT for a value out of range
 * (then *plan is zeroed). Pure. */
ncclscope_moe_result ncclscope_moe_plan_make(const ncclscope_moe_config* config,
                                             ncclscope_moe_plan* plan);

/* "recv overflow", ... for any value; never NULL. Static storage. */
const char* ncclscope_moe_result_string(int32_t result);

/* The embedded device code (sm_80, sm_90, sm_100 cubins, sm_90 PTX) for cuModuleLoadData; NULL and
 * *bytes = 0 in a build without nvcc. Static storage, owned by the library. */
const void* ncclscope_moe_fatbin(size_t* bytes);

/* The kernels run on the CPU, step for step, by the calling thread: every rank's call must run at
 * the same time on its own thread (or process) over memory all of them map. Writes *status as the
 * kernel does and returns its code; NCCLSCOPE_MOE_INVALID_ARGUMENT (touching nothing, no status)
 * when args are not from a plan (rank, epoch, pointers). */
ncclscope_moe_result ncclscope_moe_dispatch_on_cpu(const ncclscope_moe_dispatch_args* args);
ncclscope_moe_result ncclscope_moe_combine_on_cpu(const ncclscope_moe_combine_args* args);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCLSCOPE_MOE_H_ */
