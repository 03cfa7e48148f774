// The NCCL profiler plugin ABI as the emulated NCCL sees it (v4 and v5 tables), written from the
// documented layout. Kept apart from the probe's own declaration on purpose: like NCCL and a
// plugin, the two sides are built from separate definitions, and tests check they agree.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include <nccl.h>

namespace ncclsim::profabi {

enum : uint64_t {
  kEvGroup = 1,
  kEvColl = 2,
  kEvP2p = 4,
  kEvProxyOp = 8,
  kEvProxyStep = 16,
  kEvProxyCtrl = 32,
  kEvKernelCh = 64,
  kEvNetPlugin = 128,
  kEvGroupApi = 256,
  kEvCollApi = 512,
  kEvP2pApi = 1024,
  kEvKernelLaunch = 2048,
};
// ncclProfilerEventState_t values (one enum shared by every version).
constexpr int kStateSendGPUWait = 8;
constexpr int kStateSendWait = 9;
constexpr int kStateRecvWait = 10;
constexpr int kStateRecvFlushWait = 11;
constexpr int kStateRecvGPUWait = 12;
constexpr int kStateProxyOpInProgress = 19;
constexpr int kStateSendPeerWait = 20;
constexpr int kStateKernelChStop = 22;
constexpr int kStateGroupStartApiStop = 23;
constexpr int kStateGroupEndApiStart = 24;

using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt,
                        ...);

// Descriptor union members, in NCCL's member order.
struct GroupApi {
  bool graphCaptured;
  int groupDepth;
};
struct CollApi {
  const char* func;
  size_t count;
  const char* datatype;
  int root;
  void* stream;
  bool graphCaptured;
};
struct P2pApi {
  const char* func;
  size_t count;
  const char* datatype;
  void* stream;
  bool graphCaptured;
};
struct KernelLaunch {
  void* stream;
};
struct Coll4 {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
};
struct Coll5 {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
  void* parentGroup;
};
struct P2p4 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
};
struct P2p5 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
  void* parentGroup;
};
struct ProxyOp {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};
struct ProxyStep {
  int step;
};
struct KernelCh {
  uint8_t channelId;
  uint64_t pTimer;
};
struct NetPlugin {
  int64_t id;
  void* data;
};

struct Descr4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    Coll4 coll;
    P2p4 p2p;
    ProxyOp proxyOp;
    ProxyStep proxyStep;
    KernelCh kernelCh;
    NetPlugin netPlugin;
  };
};

struct Descr5 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    GroupApi groupApi;
    CollApi collApi;
    P2pApi p2pApi;
    KernelLaunch kernelLaunch;
    Coll5 coll;
    P2p5 p2p;
    ProxyOp proxyOp;
    ProxyStep proxyStep;
    KernelCh kernelCh;
    NetPlugin netPlugin;
  };
};

union StateArgs {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
};

struct Table4 {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName,
                       uint64_t commHash, int nNodes, int nranks, int rank, Logger logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, Descr4* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, int eState, StateArgs* eStateArgs);
  ncclResult_t (*finalize)(void* context);
};

struct Table5 {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
                       int nNodes, int nranks, int rank, Logger logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, Descr5* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, int eState, StateArgs* eStateArgs);
  ncclResult_t (*finalize)(void* context);
};

}  // namespace ncclsim::profabi
