#include "plugin/accel/accel_comm.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "collectives/device_code/device_code.h"
#include "collectives/planner/alltoall_kernel_args.h"
#include "collectives/planner/exchange_kernel_args.h"
#include "plugin/core/nccl_symbols.h"

namespace ncclscope::plugin {
namespace {

namespace nc = collectives;

// What each rank tells the others in the first exchange.
struct Offer {
  uint64_t host = 0;  // which host the rank runs on
  int32_t compute_major = 0;
  int32_t ready = 0;  // buffers allocated, registered and kernels loaded
  CUipcMemHandle staging{}, scratch{}, signal{};
};

uint64_t HostHash() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char* p = name; *p != '\0'; ++p)
    h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  return h;
}

// The device memory both exchanges go through, taken before this rank's own buffers: a rank
// whose GPU is nearly full must still take part in the exchanges, since one that leaves them out
// leaves its peers waiting in NCCL's allgather for ever. Room for nranks offers and this rank's.
struct ExchangeBuffer {
  const cuda::Driver& cu;
  CUdeviceptr dev = 0;
  ExchangeBuffer(const cuda::Driver& driver, int nranks) : cu(driver) {
    if (cu.mem_alloc(&dev, sizeof(Offer) * static_cast<size_t>(nranks + 1)) != CUDA_SUCCESS)
      dev = 0;
  }
  ~ExchangeBuffer() {
    if (dev != 0) cu.mem_free(dev);
  }
  ExchangeBuffer(const ExchangeBuffer&) = delete;
  ExchangeBuffer& operator=(const ExchangeBuffer&) = delete;
};

// Allgathers `bytes` (at most sizeof(Offer)) of `mine` from every rank into `all` through NCCL
// itself (the library behind the interposer), on `stream`, through `dev`, synchronously.
bool Exchange(const cuda::Driver& cu, ncclComm_t comm, CUstream stream, CUdeviceptr dev,
              const void* mine, size_t bytes, int nranks, void* all) {
  using AllGatherFn =
      ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  auto all_gather = reinterpret_cast<AllGatherFn>(NcclFnPtr(NcclFn::kAllGather));
  if (all_gather == nullptr || dev == 0) return false;
  const CUdeviceptr send = dev + bytes * static_cast<size_t>(nranks);
  return cu.memcpy_htod(send, mine, bytes) == CUDA_SUCCESS &&
         all_gather(reinterpret_cast<const void*>(send), reinterpret_cast<void*>(dev), bytes,
                    ncclInt8, comm, reinterpret_cast<cudaStream_t>(stream)) == ncclSuccess &&
         cu.stream_synchronize(stream) == CUDA_SUCCESS &&
         cu.memcpy_dtoh(all, dev, bytes * static_cast<size_t>(nranks)) == CUDA_SUCCESS;
}

// This rank's buffers, their handles and the kernels; false (with what failed) when any is missing.
bool Prepare(const cuda::Driver& cu, AccelComm* c, Offer* o, std::string* why) {
  CUdevice dev = 0;
  int major = 0;
  if (cu.ctx_get_device(&dev) != CUDA_SUCCESS ||
      cu.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) !=
          CUDA_SUCCESS) {
    *why = "no current CUDA device";
    return false;
  }
  o->compute_major = major;
  c->gpu = nc::GpuClassOf(major);
  const nc::DeviceImage image = nc::AllReduceFatbin();
  if (image.size == 0) {
    *why = "this build has no device code (built without nvcc)";
    return false;
  }
  CUmodule module = nullptr;
  if (cu.module_load_data(&module, image.data) != CUDA_SUCCESS) {
    *why = "the kernels' module did not load";
    return false;
  }
  for (int a = 0; a < 2; ++a) {
    for (int d = 0; d < 3; ++d) {
      if (cu.module_get_function(&c->kernel[a][d], module, nc::kAllReduceKernelNames[a][d]) !=
          CUDA_SUCCESS) {
        *why = std::string("kernel ") + nc::kAllReduceKernelNames[a][d] + " not in the module";
        return false;
      }
    }
  }
  const nc::DeviceImage alltoall = nc::AlltoAllFatbin();
  CUmodule alltoall_module = nullptr;
  if (alltoall.size == 0 || cu.module_load_data(&alltoall_module, alltoall.data) != CUDA_SUCCESS ||
      cu.module_get_function(&c->alltoall, alltoall_module, nc::kAlltoAllKernelName) !=
          CUDA_SUCCESS) {
    *why = "the all-to-all kernel's module did not load";
    return false;
  }
  const nc::DeviceImage exchange = nc::ExchangeFatbin();
  CUmodule exchange_module = nullptr;
  if (exchange.size == 0 || cu.module_load_data(&exchange_module, exchange.data) != CUDA_SUCCESS ||
      cu.module_get_function(&c->exchange, exchange_module, nc::kExchangeKernelName) !=
          CUDA_SUCCESS) {
    *why = "the exchange kernel's module did not load";
    return false;
  }
  if (cu.event_create(&c->last_launch, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
    *why = "no CUDA event to order the kernels";
    return false;
  }
  if (cu.mem_alloc(&c->staging, c->buffer_bytes) != CUDA_SUCCESS ||
      cu.mem_alloc(&c->scratch, c->buffer_bytes) != CUDA_SUCCESS ||
      cu.mem_alloc(&c->signal, sizeof(nc::Signal)) != CUDA_SUCCESS ||
      cu.memset_d8(c->signal, 0, sizeof(nc::Signal)) != CUDA_SUCCESS) {
    *why = "device memory for the buffers could not be allocated";
    return false;
  }
  void* stall_host = nullptr;
  if (cu.mem_host_alloc(&stall_host, sizeof(nc::KernelStall),
                        CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS ||
      cu.mem_host_get_device_pointer(&c->stall, stall_host, 0) != CUDA_SUCCESS) {
    *why = "mapped host memory for the stall record could not be allocated";
    return false;
  }
  std::memset(stall_host, 0, sizeof(nc::KernelStall));
  c->stall_host = static_cast<nc::KernelStall*>(stall_host);
  if (cu.ipc_get_mem_handle(&o->staging, c->staging) != CUDA_SUCCESS ||
      cu.ipc_get_mem_handle(&o->scratch, c->scratch) != CUDA_SUCCESS ||
      cu.ipc_get_mem_handle(&o->signal, c->signal) != CUDA_SUCCESS) {
    *why = "the buffers have no IPC handles";
    return false;
  }
  return true;
}

void FreeBuffers(const cuda::Driver& cu, AccelComm* c) {
  // The pinned stall record is kept: a few bytes, and freeing it needs one more driver function.
  for (CUdeviceptr* p : {&c->staging, &c->scratch, &c->signal}) {
    if (*p != 0) cu.mem_free(*p);
    *p = 0;
  }
}

// The reason every rank derives from the same offers; empty when all can go.
std::string Agree(const std::vector<Offer>& offers) {
  for (size_t r = 0; r < offers.size(); ++r) {
    if (offers[r].ready == 0) return "rank " + std::to_string(r) + " could not prepare";
    if (offers[r].host != offers[0].host) return "ranks on more than one host";
    if (offers[r].compute_major != offers[0].compute_major) return "GPUs of different generations";
  }
  if (nc::GpuClassOf(offers[0].compute_major) == nc::GpuClass::kUnknown) {
    return "GPU generation without ncclscope kernels";
  }
  return "";
}

// What every kernel's parameter takes from the communicator and the call (the kernels' argument
// structs share these members): every rank's staging buffer as source (copy-in: the user's buffers
// are not registered) and flags, this rank's buffers, the stall record and the next epoch.
template <typename Args>
void FillCommonArgs(const AccelComm& c, const void* sendbuff, void* recvbuff, Args* a) {
  for (int q = 0; q < c.nranks; ++q) {
    a->source[q] = c.peer_staging[q];
    a->signal[q] = c.peer_signal[q];
  }
  a->input = static_cast<const unsigned char*>(sendbuff);
  a->staging = reinterpret_cast<unsigned char*>(c.staging);
  a->output = static_cast<unsigned char*>(recvbuff);
  a->stall = reinterpret_cast<nc::KernelStall*>(c.stall);
  a->timeout_ns = c.timeout_ns;
  a->rank = c.rank;
  a->nranks = c.nranks;
  a->epoch = c.epoch + 1;
  a->copy_in = 1;
}

// Launches one kernel of the communicator after its previous launch when that was on another
// stream (the kernels share the communicator's buffers and flags).
bool LaunchInOrder(const cuda::Driver& cu, AccelComm* c, CUfunction kernel, uint32_t blocks,
                   uint32_t threads, void** params, CUstream stream) {
  if (c->launched && stream != c->last_stream &&
      cu.stream_wait_event(stream, c->last_launch, 0) != CUDA_SUCCESS) {
    return false;
  }
  if (cu.launch_kernel(kernel, blocks, 1, 1, threads, 1, 1, 0, stream, params, nullptr) !=
      CUDA_SUCCESS) {
    return false;
  }
  // Without the event the next launch has nothing to wait for: it then only keeps stream order.
  c->launched = cu.event_record(c->last_launch, stream) == CUDA_SUCCESS;
  c->last_stream = stream;
  return true;
}

// The same for a kernel of the barrier protocol, with the next epoch (the launch's parameter
// carries it), remembered with the call's sequence number for a stall report.
bool Launch(const cuda::Driver& cu, AccelComm* c, CUfunction kernel, uint32_t blocks,
            uint32_t threads, void** params, CUstream stream, uint64_t seq) {
  if (!LaunchInOrder(cu, c, kernel, blocks, threads, params, stream)) return false;
  c->epoch += 1;
  c->seq_of_epoch[c->epoch % AccelComm::kEpochs].store(seq, std::memory_order_relaxed);
  return true;
}

}  // namespace

std::unique_ptr<AccelComm> SetUpAccelComm(const cuda::Driver& cu, ncclComm_t comm, int rank,
                                          int nranks, size_t buffer_bytes, uint64_t timeout_ns) {
  auto c = std::make_unique<AccelComm>();
  c->rank = rank;
  c->nranks = nranks;
  c->buffer_bytes = buffer_bytes;
  c->timeout_ns = timeout_ns;
  if (nranks < 2 || nranks > nc::kMaxRanks || rank < 0 || rank >= nranks) {
    c->why_not = "communicator of 1 rank or more than 8";  // known alike on every rank
    return c;
  }
  CUstream stream = nullptr;
  if (cu.stream_create(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    // Every rank must take part in the exchanges: without a stream this one cannot, so it stays
    // out the same way on all (each rank that fails here fails the same check).
    c->why_not = "no CUDA stream for the exchange";
    return c;
  }
  const ExchangeBuffer exchange(cu, nranks);
  Offer mine;
  mine.host = HostHash();
  std::string local_why;
  mine.ready = Prepare(cu, c.get(), &mine, &local_why) ? 1 : 0;
  std::vector<Offer> offers(static_cast<size_t>(nranks));
  if (!Exchange(cu, comm, stream, exchange.dev, &mine, sizeof(Offer), nranks, offers.data())) {
    c->why_not = "the exchange through NCCL failed";
    FreeBuffers(cu, c.get());
    return c;
  }
  c->why_not = Agree(offers);
  if (!c->why_not.empty()) {
    if (mine.ready == 0 && !local_why.empty()) c->why_not += " (here: " + local_why + ")";
    FreeBuffers(cu, c.get());
    return c;
  }
  // Map every peer's buffers; whether all ranks managed is agreed in a second exchange.
  int32_t mapped = 1;
  for (int q = 0; q < nranks && mapped != 0; ++q) {
    if (q == rank) {
      c->peer_staging[q] = reinterpret_cast<const unsigned char*>(c->staging);
      c->peer_scratch[q] = reinterpret_cast<unsigned char*>(c->scratch);
      c->peer_signal[q] = reinterpret_cast<nc::Signal*>(c->signal);
      continue;
    }
    CUdeviceptr st = 0, sc = 0, sg = 0;
    const Offer& o = offers[static_cast<size_t>(q)];
    mapped = cu.ipc_open_mem_handle(&st, o.staging, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
                         CUDA_SUCCESS &&
                     cu.ipc_open_mem_handle(&sc, o.scratch, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
                         CUDA_SUCCESS &&
                     cu.ipc_open_mem_handle(&sg, o.signal, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
                         CUDA_SUCCESS
                 ? 1
                 : 0;
    c->peer_staging[q] = reinterpret_cast<const unsigned char*>(st);
    c->peer_scratch[q] = reinterpret_cast<unsigned char*>(sc);
    c->peer_signal[q] = reinterpret_cast<nc::Signal*>(sg);
  }
  std::vector<int32_t> all_mapped(static_cast<size_t>(nranks));
  if (!Exchange(cu, comm, stream, exchange.dev, &mapped, sizeof(mapped), nranks,
                all_mapped.data())) {
    c->why_not = "the exchange through NCCL failed";
    return c;
  }
  for (int q = 0; q < nranks; ++q) {
    if (all_mapped[static_cast<size_t>(q)] == 0) {
      c->why_not = "rank " + std::to_string(q) + " could not map its peers' memory";
      return c;
    }
  }
  c->held.reserve(AccelComm::kMaxHeld);
  c->ready = true;
  return c;
}

bool LaunchAccelAllReduce(const cuda::Driver& cu, AccelComm* c, const nc::AllReducePlan& plan,
                          const void* sendbuff, void* recvbuff, CUstream stream, uint64_t seq) {
  const int algorithm = plan.algorithm == nc::Algorithm::kOneShot ? 0 : 1;
  const int dtype = plan.dtype == nc::Dtype::kFp16 ? 0 : plan.dtype == nc::Dtype::kFp32 ? 1 : 2;
  nc::AllReduceKernelArgs a{};
  FillCommonArgs(*c, sendbuff, recvbuff, &a);
  for (int q = 0; q < c->nranks; ++q) a.scratch[q] = c->peer_scratch[q];
  a.packs = plan.packs;
  void* params[] = {&a};
  return Launch(cu, c, c->kernel[algorithm][dtype], plan.blocks, plan.threads, params, stream, seq);
}

bool LaunchAccelAlltoAll(const cuda::Driver& cu, AccelComm* c, const nc::AlltoAllPlan& plan,
                         const void* sendbuff, void* recvbuff, CUstream stream, uint64_t seq) {
  nc::AlltoAllKernelArgs a{};
  FillCommonArgs(*c, sendbuff, recvbuff, &a);
  a.packs_per_peer = plan.packs_per_peer;
  void* params[] = {&a};
  return Launch(cu, c, c->alltoall, plan.blocks, plan.threads, params, stream, seq);
}

bool LaunchAccelExchange(const cuda::Driver& cu, AccelComm* c, const nc::ExchangePlan& plan,
                         const ExchangePartBuffer* parts, CUstream stream) {
  nc::ExchangeKernelArgs a{};
  for (int q = 0; q < c->nranks; ++q) {
    // Every rank's staging as mapped here: its own is the device pointer, peers' through IPC.
    a.staging[q] = const_cast<unsigned char*>(c->peer_staging[q]);
    a.signal[q] = c->peer_signal[q];
  }
  a.stall = reinterpret_cast<nc::KernelStall*>(c->stall);
  a.slot_bytes = plan.slot_bytes;
  a.sub_bytes = plan.sub_bytes;
  a.timeout_ns = c->timeout_ns;
  a.rank = c->rank;
  a.nranks = c->nranks;
  a.nparts = plan.nparts;
  a.blocks_per_part = plan.blocks_per_part;
  uint32_t next_sent[nc::kMaxRanks];
  uint32_t next_received[nc::kMaxRanks];
  std::memcpy(next_sent, c->sent_chunks, sizeof next_sent);
  std::memcpy(next_received, c->received_chunks, sizeof next_received);
  for (uint32_t i = 0; i < plan.nparts; ++i) {
    const ExchangePartBuffer& b = parts[i];
    nc::ExchangePartArgs& p = a.part[i];
    p.user = static_cast<unsigned char*>(b.buffer);
    p.bytes = b.bytes;
    p.peer = b.peer;
    p.send = b.send ? 1 : 0;
    uint32_t& counter = (b.send ? next_sent : next_received)[b.peer];
    p.first_chunk = counter;
    counter += static_cast<uint32_t>(nc::ExchangeChunks(plan, b.bytes));
  }
  void* params[] = {&a};
  // Not an epoch of the communicator's barriers (the exchange counts chunks per pair): the
  // launch leaves the epoch alone, and a stall of it names no collective (seq 0).
  if (!LaunchInOrder(cu, c, c->exchange, plan.nparts * plan.blocks_per_part, plan.threads, params,
                     stream)) {
    return false;
  }
  std::memcpy(c->sent_chunks, next_sent, sizeof next_sent);
  std::memcpy(c->received_chunks, next_received, sizeof next_received);
  return true;
}

bool AccelStalled(const AccelComm& c, nc::Stall* out, uint64_t* seq) {
  if (c.stall_host == nullptr) return false;
  // Written by the device (system-scope atomic, then a system fence) or the emulator's twin.
  if (std::atomic_ref<int32_t>(c.stall_host->code).load(std::memory_order_acquire) == 0) {
    return false;
  }
  const nc::KernelStall& k = *c.stall_host;
  *out = nc::Stall{k.rank, k.peer, k.block, static_cast<nc::Barrier>(k.barrier), k.want, k.seen};
  const bool exchange =
      out->barrier == nc::Barrier::kChunkReady || out->barrier == nc::Barrier::kSlotFree;
  *seq = exchange ? 0 : c.seq_of_epoch[k.want % AccelComm::kEpochs].load(std::memory_order_relaxed);
  return true;
}

}  // namespace ncclscope::plugin
