/* MoE dispatch and combine through ncclscope's C API (collectives/include/ncclscope/moe.h), the way
 * a framework calls them: one process per rank, the CUDA driver API found at run time, a
 * registered buffer per rank shared over CUDA IPC, the embedded kernels loaded from the library's
 * fatbin and launched with cuLaunchKernel, dispatch, the experts (identity here: a framework runs
 * its grouped GEMM over recv_x with recv_counts), combine, and a self-check of every rank's
 * result against the weighted sum of its own tokens, bit for bit.
 *
 *   moe_dispatch_combine [ranks] [exact|rank-sums]
 *       ranks 2..8 (default 4), rank r on device r; combine exact (default: one row per used slot,
 *       rounded once) or by rank sums (a row per token and expert rank, rounded twice)
 *
 * Linked with libncclscope_moe.so, the API's shared library (the NCCL interposer libncclscope.so
 * is not needed). Runs on the emulated driver (build/lib/sim/libcuda.so.1 first on
 * LD_LIBRARY_PATH), whose kernel launches run the host twins libncclscope_moe.so exports
 * (docs/emulator.md, host twins): there the twins, not the kernels, compute. On a node with GPUs
 * the same program launches the real kernels, which have never run on a GPU yet. Exit status: 0
 * when every rank's check passed, 77 when the library was built without device code, 1 otherwise.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ncclscope/moe.h"

enum { kHidden = 256, kTopK = 4, kExpertsPerRank = 8, kMaxTokens = 64, kSkip = 77 };
static const uint64_t kTimeoutNs = 60ull * 1000 * 1000 * 1000;

/* ---- the driver API, found at run time ---- */

typedef struct Driver {
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGet)(CUdevice*, int);
  CUresult (*DeviceGetCount)(int*);
  CUresult (*PrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*IpcGetMemHandle)(CUipcMemHandle*, CUdeviceptr);
  CUresult (*IpcOpenMemHandle)(CUdeviceptr*, CUipcMemHandle, unsigned);
  CUresult (*IpcCloseMemHandle)(CUdeviceptr);
  CUresult (*ModuleLoadData)(CUmodule*, const void*);
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**);
  CUresult (*StreamCreate)(CUstream*, unsigned);
  CUresult (*StreamSynchronize)(CUstream);
} Driver;

static int LoadDriver(Driver* d) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (lib == NULL) {
    fprintf(stderr, "no libcuda.so.1: %s\n", dlerror());
    return 0;
  }
  struct {
    void** slot;
    const char* name;
  } symbols[] = {
      {(void**)&d->Init, "cuInit"},
      {(void**)&d->DeviceGet, "cuDeviceGet"},
      {(void**)&d->DeviceGetCount, "cuDeviceGetCount"},
      {(void**)&d->PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
      {(void**)&d->CtxSetCurrent, "cuCtxSetCurrent"},
      {(void**)&d->MemAlloc, "cuMemAlloc_v2"},
      {(void**)&d->MemFree, "cuMemFree_v2"},
      {(void**)&d->MemsetD8, "cuMemsetD8_v2"},
      {(void**)&d->MemcpyHtoD, "cuMemcpyHtoD_v2"},
      {(void**)&d->MemcpyDtoH, "cuMemcpyDtoH_v2"},
      {(void**)&d->IpcGetMemHandle, "cuIpcGetMemHandle"},
      {(void**)&d->IpcOpenMemHandle, "cuIpcOpenMemHandle_v2"},
      {(void**)&d->IpcCloseMemHandle, "cuIpcCloseMemHandle"},
      {(void**)&d->ModuleLoadData, "cuModuleLoadData"},
      {(void**)&d->ModuleGetFunction, "cuModuleGetFunction"},
      {(void**)&d->LaunchKernel, "cuLaunchKernel"},
      {(void**)&d->StreamCreate, "cuStreamCreate"},
      {(void**)&d->StreamSynchronize, "cuStreamSynchronize"},
  };
  for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); ++i) {
    *symbols[i].slot = dlsym(lib, symbols[i].name);
    if (*symbols[i].slot == NULL) {
      fprintf(stderr, "libcuda.so.1 has no %s\n", symbols[i].name);
      return 0;
    }
  }
  return 1;
}

/* Stops the rank at the first failed driver call, naming it. */
#define CHECK(call)                                                                  \
  do {                                                                               \
    CUresult check_result_ = (call);                                                 \
    if (check_result_ != CUDA_SUCCESS) {                                             \
      fprintf(stderr, "rank %d: %s failed (%d)\n", rank, #call, (int)check_result_); \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

/* ---- what the ranks share on the host: IPC handles and a barrier ---- */

typedef struct Shared {
  CUipcMemHandle handle[NCCLSCOPE_MOE_MAX_RANKS];
  int arrived;
} Shared;

/* Waits until `count` ranks have arrived in total (each barrier adds nranks); 0 after a minute. */
static int HostBarrier(Shared* s, int count) {
  __atomic_fetch_add(&s->arrived, 1, __ATOMIC_ACQ_REL);
  const struct timespec pause = {0, 1000000};
  for (int waited_ms = 0; waited_ms < 60000; ++waited_ms) {
    if (__atomic_load_n(&s->arrived, __ATOMIC_ACQUIRE) >= count) return 1;
    nanosleep(&pause, NULL);
  }
  return 0;
}

/* ---- every rank's inputs, rebuilt from the rank alone, so each can check its own results ---- */

static uint32_t Next(uint32_t* state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

static float BfToFloat(uint16_t b) {
  const uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Round to nearest even (no NaN here), as __float2bfloat16_rn. */
static uint16_t FloatToBf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

typedef struct Tokens {
  int32_t count;
  uint16_t x[kMaxTokens * kHidden]; /* bf16 */
  int32_t topk[kMaxTokens * kTopK];
  float weights[kMaxTokens * kTopK];
} Tokens;

static void MakeTokens(int rank, int nranks, Tokens* t) {
  uint32_t state = 977u * (uint32_t)rank + 1u;
  t->count = kMaxTokens - 5 * rank; /* ranks have different token counts */
  for (int i = 0; i < t->count * kHidden; ++i) {
    t->x[i] = FloatToBf((float)(Next(&state) % 2001) / 500.0f - 2.0f);
  }
  for (int i = 0; i < t->count * kTopK; ++i) {
    /* One slot in eight unused (-1), as a router with capacity dropping leaves them. */
    t->topk[i] = Next(&state) % 8 == 0 ? -1 : (int32_t)(Next(&state) % (kExpertsPerRank * nranks));
    t->weights[i] = (float)(Next(&state) % 1000) / 1000.0f;
  }
}

/* ---- one rank ---- */

static int32_t combine_mode = NCCLSCOPE_MOE_COMBINE_EXACT; /* from the command line */

/* What combine must give element h of token t: exact, the fused multiply-adds of every used slot
 * in k order, rounded once; rank sums, each expert rank's slots summed so and rounded to bf16, then
 * those sums added in the order of the ranks' first slots, rounded again. Identity experts: a
 * slot's expert row is the token's own row. */
static uint16_t Expected(const Tokens* mine, int t, int h) {
  const float x = BfToFloat(mine->x[t * kHidden + h]);
  const int32_t* topk = mine->topk + t * kTopK;
  const float* w = mine->weights + t * kTopK;
  float acc = 0.0f;
  if (combine_mode == NCCLSCOPE_MOE_COMBINE_EXACT) {
    for (int k = 0; k < kTopK; ++k) {
      if (topk[k] >= 0) acc = fmaf(w[k], x, acc);
    }
    return FloatToBf(acc);
  }
  for (int k = 0; k < kTopK; ++k) {
    if (topk[k] < 0) continue;
    const int q = topk[k] / kExpertsPerRank;
    int first = 1;
    for (int j = 0; j < k; ++j) first = first && !(topk[j] >= 0 && topk[j] / kExpertsPerRank == q);
    if (!first) continue;
    float sum = 0.0f;
    for (int j = k; j < kTopK; ++j) {
      if (topk[j] >= 0 && topk[j] / kExpertsPerRank == q) sum = fmaf(w[j], x, sum);
    }
    acc += BfToFloat(FloatToBf(sum));
  }
  return FloatToBf(acc);
}

static int Rank(int rank, int nranks, Shared* shared) {
  ncclscope_moe_config config = {0};
  config.nranks = nranks;
  config.num_experts = kExpertsPerRank * nranks;
  config.top_k = kTopK;
  config.hidden = kHidden;
  config.dtype = NCCLSCOPE_MOE_BF16;
  config.max_tokens = kMaxTokens;
  config.combine = combine_mode;
  ncclscope_moe_plan plan;
  if (ncclscope_moe_plan_make(&config, &plan) != NCCLSCOPE_MOE_OK) return 1;
  size_t image_bytes = 0;
  const void* image = ncclscope_moe_fatbin(&image_bytes);
  if (image == NULL) {
    if (rank == 0) printf("libncclscope was built without device code: nothing to load\n");
    return kSkip;
  }

  Driver cu;
  if (!LoadDriver(&cu)) return 1;
  CUdevice device;
  CUcontext context;
  CUstream stream;
  CHECK(cu.Init(0));
  CHECK(cu.DeviceGet(&device, rank));
  CHECK(cu.PrimaryCtxRetain(&context, device));
  CHECK(cu.CtxSetCurrent(context));
  CHECK(cu.StreamCreate(&stream, 0));

  /* The registered buffer, zeroed, and every peer's mapped through IPC. */
  CUdeviceptr buffer;
  CHECK(cu.MemAlloc(&buffer, (size_t)plan.buffer_bytes));
  CHECK(cu.MemsetD8(buffer, 0, (size_t)plan.buffer_bytes));
  CHECK(cu.IpcGetMemHandle(&shared->handle[rank], buffer));
  if (!HostBarrier(shared, nranks)) return 1;
  CUdeviceptr peer[NCCLSCOPE_MOE_MAX_RANKS];
  for (int q = 0; q < nranks; ++q) {
    if (q == rank) {
      peer[q] = buffer;
    } else {
      CHECK(cu.IpcOpenMemHandle(&peer[q], shared->handle[q], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    }
  }

  CUmodule module;
  CUfunction dispatch_kernel, combine_kernel;
  CHECK(cu.ModuleLoadData(&module, image));
  CHECK(cu.ModuleGetFunction(&dispatch_kernel, module, NCCLSCOPE_MOE_DISPATCH_KERNEL));
  CHECK(cu.ModuleGetFunction(&combine_kernel, module, NCCLSCOPE_MOE_COMBINE_KERNEL));

  /* This rank's tokens and the call's outputs in device memory. */
  static Tokens mine;
  MakeTokens(rank, nranks, &mine);
  const size_t row = (size_t)plan.row_bytes, capacity = (size_t)plan.config.recv_capacity;
  const size_t entries = (size_t)mine.count * kTopK;
  CUdeviceptr x, topk, weights, recv_x, recv_src, recv_counts, send_rows, out, status;
  CHECK(cu.MemAlloc(&x, mine.count * row));
  CHECK(cu.MemAlloc(&topk, entries * 4));
  CHECK(cu.MemAlloc(&weights, entries * 4));
  CHECK(cu.MemAlloc(&recv_x, capacity * row));
  CHECK(cu.MemAlloc(&recv_src, capacity * sizeof(ncclscope_moe_source)));
  CHECK(cu.MemAlloc(&recv_counts, (size_t)plan.local_experts * 4));
  CHECK(cu.MemAlloc(&send_rows, entries * 4));
  CHECK(cu.MemAlloc(&out, mine.count * row));
  CHECK(cu.MemAlloc(&status, 2 * sizeof(ncclscope_moe_status)));
  CHECK(cu.MemcpyHtoD(x, mine.x, mine.count * row));
  CHECK(cu.MemcpyHtoD(topk, mine.topk, entries * 4));
  CHECK(cu.MemcpyHtoD(weights, mine.weights, entries * 4));

  ncclscope_moe_common_args common;
  memset(&common, 0, sizeof(common));
  common.plan = plan;
  for (int q = 0; q < nranks; ++q) common.buffer[q] = (void*)(uintptr_t)peer[q];
  common.timeout_ns = kTimeoutNs;
  common.rank = rank;
  common.num_tokens = mine.count;

  /* Dispatch (epoch 1: the first call on the zeroed buffer). */
  ncclscope_moe_dispatch_args d;
  memset(&d, 0, sizeof(d));
  d.common = common;
  d.common.epoch = 1;
  d.common.status = (ncclscope_moe_status*)(uintptr_t)status;
  d.x = (const void*)(uintptr_t)x;
  d.topk_idx = (const int32_t*)(uintptr_t)topk;
  d.recv_x = (void*)(uintptr_t)recv_x;
  d.recv_src = (ncclscope_moe_source*)(uintptr_t)recv_src;
  d.recv_counts = (int32_t*)(uintptr_t)recv_counts;
  d.send_rows = (int32_t*)(uintptr_t)send_rows;
  void* dispatch_params[] = {&d};
  CHECK(cu.LaunchKernel(dispatch_kernel, (unsigned)plan.config.blocks, 1, 1,
                        (unsigned)plan.config.threads, 1, 1, 0, stream, dispatch_params, NULL));

  /* The experts: identity, so their outputs are the received rows themselves. */
  ncclscope_moe_combine_args c;
  memset(&c, 0, sizeof(c));
  c.common = common;
  c.common.epoch = 2;
  c.common.status = (ncclscope_moe_status*)(uintptr_t)status + 1;
  c.expert_out = (const void*)(uintptr_t)recv_x;
  c.recv_counts = (const int32_t*)(uintptr_t)recv_counts;
  c.topk_idx = (const int32_t*)(uintptr_t)topk;
  c.send_rows = (const int32_t*)(uintptr_t)send_rows;
  c.topk_weights = (const float*)(uintptr_t)weights;
  c.out = (void*)(uintptr_t)out;
  void* combine_params[] = {&c};
  CHECK(cu.LaunchKernel(combine_kernel, (unsigned)plan.config.blocks, 1, 1,
                        (unsigned)plan.config.threads, 1, 1, 0, stream, combine_params, NULL));
  CHECK(cu.StreamSynchronize(stream));

  /* The check: the calls' status, the rows each local expert received (from every rank's
   * routing, rebuilt), and every output element against the weighted sum in k order. */
  ncclscope_moe_status st[2];
  int32_t counts[kExpertsPerRank];
  static uint16_t result[kMaxTokens * kHidden];
  CHECK(cu.MemcpyDtoH(st, status, sizeof(st)));
  CHECK(cu.MemcpyDtoH(counts, recv_counts, sizeof(counts)));
  CHECK(cu.MemcpyDtoH(result, out, mine.count * row));
  int failures = 0;
  for (int i = 0; i < 2; ++i) {
    if (st[i].code != NCCLSCOPE_MOE_OK) {
      printf("rank %d: %s: %s (rank %d, detail %d)\n", rank, i == 0 ? "dispatch" : "combine",
             ncclscope_moe_result_string(st[i].code), st[i].rank, st[i].detail);
      ++failures;
    }
  }
  int32_t want_counts[kExpertsPerRank] = {0};
  static Tokens other;
  for (int p = 0; p < nranks; ++p) {
    MakeTokens(p, nranks, &other);
    for (int i = 0; i < other.count * kTopK; ++i) {
      const int32_t e = other.topk[i] - rank * kExpertsPerRank;
      if (other.topk[i] >= 0 && e >= 0 && e < kExpertsPerRank) ++want_counts[e];
    }
  }
  int received = 0;
  for (int e = 0; e < kExpertsPerRank; ++e) {
    received += counts[e];
    if (counts[e] != want_counts[e]) ++failures;
  }
  int wrong = 0;
  for (int t = 0; t < mine.count; ++t) {
    for (int h = 0; h < kHidden; ++h) {
      if (result[t * kHidden + h] != Expected(&mine, t, h)) ++wrong;
    }
  }
  failures += wrong;
  printf("rank %d: %d tokens sent, %d rows received over %d local experts, combine%s %s\n", rank,
         mine.count, received, kExpertsPerRank,
         combine_mode == NCCLSCOPE_MOE_COMBINE_RANK_SUMS ? " (rank sums)" : "",
         wrong == 0 ? "equals the weighted sum bit for bit" : "WRONG");

  /* Nobody closes or frees while a peer may still map its buffer. */
  if (!HostBarrier(shared, 2 * nranks)) return 1;
  for (int q = 0; q < nranks; ++q) {
    if (q != rank) CHECK(cu.IpcCloseMemHandle(peer[q]));
  }
  if (!HostBarrier(shared, 3 * nranks)) return 1;
  CHECK(cu.MemFree(buffer));
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  const int nranks = argc > 1 ? atoi(argv[1]) : 4;
  const char* mode = argc > 2 ? argv[2] : "exact";
  if (strcmp(mode, "rank-sums") == 0) combine_mode = NCCLSCOPE_MOE_COMBINE_RANK_SUMS;
  if (nranks < 2 || nranks > NCCLSCOPE_MOE_MAX_RANKS || argc > 3 ||
      (strcmp(mode, "exact") != 0 && strcmp(mode, "rank-sums") != 0)) {
    fprintf(stderr, "usage: %s [ranks 2..8] [exact|rank-sums]\n", argv[0]);
    return 2;
  }
  /* Shared before the fork; the driver is loaded only in the ranks (a CUDA context does not
   * survive fork). */
  Shared* shared =
      mmap(NULL, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 1;
  memset(shared, 0, sizeof(*shared));
  fflush(stdout);
  for (int r = 0; r < nranks; ++r) {
    const pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      const int code = Rank(r, nranks, shared);
      fflush(stdout);
      exit(code);
    }
  }
  int result = 0;
  for (int r = 0; r < nranks; ++r) {
    int wstatus = 0;
    if (wait(&wstatus) < 0) return 1;
    const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1;
    if (code != 0 && (result == 0 || result == kSkip)) result = code;
  }
  return result;
}
