// The NCCL profiler plugin ABI (function tables ncclProfiler_v4/v5/v6), written from the documented
// layout (NVIDIA/nccl v2.28.9-1, src/include/plugin/profiler/profiler_v{4,5,6}.h): NCCL ships no
// header for it, so every plugin declares its own. Only what the probe reads is spelled out in
// full; the union members we never read are declared so the union has NCCL's size.
// tests/plugin/profiler_abi_test.cpp pins the sizes and offsets.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include <nccl.h>

namespace ncclscope::plugin::prof_abi {

// Event type bits (descriptor `type`, activation mask). Stable across versions.
inline constexpr uint64_t kGroup = 1u << 0;
inline constexpr uint64_t kColl = 1u << 1;
inline constexpr uint64_t kP2p = 1u << 2;
inline constexpr uint64_t kProxyOp = 1u << 3;
inline constexpr uint64_t kProxyStep = 1u << 4;
inline constexpr uint64_t kProxyCtrl = 1u << 5;
inline constexpr uint64_t kKernelCh = 1u << 6;       // v3+
inline constexpr uint64_t kNetPlugin = 1u << 7;      // v3+
inline constexpr uint64_t kGroupApi = 1u << 8;       // v5+
inline constexpr uint64_t kCollApi = 1u << 9;        // v5+
inline constexpr uint64_t kP2pApi = 1u << 10;        // v5+
inline constexpr uint64_t kKernelLaunch = 1u << 11;  // v5+

// One state enum shared by all versions; the values we name.
inline constexpr int kStateKernelChStop = 22;

using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line,
                             const char* fmt, ...);

// The union members every version from v4 on shares, after the version-specific `type`.
struct CollApiV5 {
  const char* func;
  size_t count;
  const char* datatype;
  int root;
  void* stream;
  bool graphCaptured;
};
struct P2pApiV5 {
  const char* func;
  size_t count;
  const char* datatype;
  void* stream;
  bool graphCaptured;
};
struct CollV4 {
  uint64_t seqNumber;  // per communicator and per collective type, from 0
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
struct CollV5 {
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
  void* parentGroup;  // v5: the legacy Group event (parentObj is the CollApi event)
};
struct P2pV5 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
  void* parentGroup;
};
struct ProxyOpV4 {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};
struct KernelChV4 {
  uint8_t channelId;
  uint64_t pTimer;  // GPU %globaltimer ns when the channel started the work item
};
struct NetPluginV4 {
  int64_t id;
  void* data;
};

struct EventDescrV4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    CollV4 coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    ProxyOpV4 proxyOp;
    struct {
      int step;
    } proxyStep;
    KernelChV4 kernelCh;
    NetPluginV4 netPlugin;
  };
};

struct EventDescrV5 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    CollApiV5 collApi;
    P2pApiV5 p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    CollV5 coll;
    P2pV5 p2p;
    ProxyOpV4 proxyOp;
    struct {
      int step;
    } proxyStep;
    KernelChV4 kernelCh;
    NetPluginV4 netPlugin;
  };
};

// v6 adds copy-engine events (CeColl/CeSync/CeBatch) to the union; the members we read keep their
// place, so v6 descriptors are read through EventDescrV5.

// State arguments (v4..v6): one 8-byte union.
union StateArgsV4 {
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

using StartEventFn = ncclResult_t (*)(void* context, void** eHandle, void* eDescr);
using StopEventFn = ncclResult_t (*)(void* eHandle);
using RecordEventStateFn = ncclResult_t (*)(void* eHandle, int eState, StateArgsV4* eStateArgs);
using FinalizeFn = ncclResult_t (*)(void* context);

struct TableV4 {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName,
                       uint64_t commHash, int nNodes, int nranks, int rank, DebugLogger logfn);
  StartEventFn startEvent;
  StopEventFn stopEvent;
  RecordEventStateFn recordEventState;
  FinalizeFn finalize;
};

// v5 and v6: commId comes before the mask (argument order changed from v4).
struct TableV5 {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
                       int nNodes, int nranks, int rank, DebugLogger logfn);
  StartEventFn startEvent;
  StopEventFn stopEvent;
  RecordEventStateFn recordEventState;
  FinalizeFn finalize;
};
using TableV6 = TableV5;

}  // namespace ncclscope::plugin::prof_abi
