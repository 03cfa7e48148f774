#include "sim/emulator/profiler_task_order.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <tuple>
#include <utility>

#include "sim/emulator/op_desc.h"

namespace ncclsim {
namespace {

// bitops.h u32fpEncode: a float-like code of x with `bits_per_pow2` mantissa bits.
uint32_t u32fpEncode(uint32_t x, int bits_per_pow2) {
  const int log2x = 31 - __builtin_clz(x | 1);
  const uint32_t mantissa =
      x >> (log2x >= bits_per_pow2 ? log2x - bits_per_pow2 : 0) & ((1u << bits_per_pow2) - 1);
  const uint32_t exponent = log2x >= bits_per_pow2 ? log2x - (bits_per_pow2 - 1) : 0;
  return exponent << bits_per_pow2 | mantissa;
}

// ncclTaskCollSorter's bin: 1 KiB units, 4 bins per power of two, up to 1 GiB, largest first.
int sizeBin(uint64_t bytes) {
  constexpr int kUnitLog2 = 10;
  constexpr uint64_t kMaxSize = 1ull << 30;
  constexpr int kBinCount = 1 + (30 - kUnitLog2) * 4;
  const auto units = static_cast<uint32_t>(std::min(kMaxSize, bytes) >> kUnitLog2);
  return kBinCount - 1 - static_cast<int>(u32fpEncode(units, 2));
}

// ncclFuncTrafficPerByte.
uint64_t trafficBytes(OpKind k, size_t count, ncclDataType_t dtype, int nranks) {
  const uint64_t per = k == OpKind::kAllReduce                                    ? 2
                       : (k == OpKind::kAllGather || k == OpKind::kReduceScatter) ? uint64_t(nranks)
                                                                                  : 1;
  return uint64_t(count) * dtypeSize(dtype) * per;
}

// collTaskAppend: AllGather and Broadcast tasks are counted in bytes of ncclInt8.
bool countedInBytes(OpKind k) {
  return k == OpKind::kAllGather || k == OpKind::kBroadcast;
}

}  // namespace

bool isPlannedCollective(OpKind k) {
  return k == OpKind::kAllReduce || k == OpKind::kBroadcast || k == OpKind::kReduce ||
         k == OpKind::kAllGather || k == OpKind::kReduceScatter;
}

std::vector<size_t> collPlanOrder(int nranks, const std::vector<const OpDesc*>& colls) {
  // The sorter pushes each task at the head of its bin: bins ascending, newest first within one.
  std::vector<std::pair<int, size_t>> keyed;  // (bin, call index)
  for (size_t i = 0; i < colls.size(); ++i) {
    const OpDesc& d = *colls[i];
    keyed.emplace_back(sizeBin(trafficBytes(d.kind, d.count, d.dtype, nranks)), i);
  }
  std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  });
  // ncclPrepareTasks: gather by (function, op, datatype) in first-seen order, each a LIFO.
  std::vector<std::vector<size_t>> gathered;
  std::vector<std::tuple<int, int, int>> keys;
  for (const auto& [bin, i] : keyed) {
    const OpDesc& d = *colls[i];
    const int dtype = countedInBytes(d.kind) ? int(ncclInt8) : int(d.dtype);
    const std::tuple<int, int, int> key{int(d.kind), int(d.red), dtype};
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(key);
      gathered.emplace_back();
      it = keys.end() - 1;
    }
    auto& list = gathered[size_t(it - keys.begin())];
    list.insert(list.begin(), i);
  }
  std::vector<size_t> order;
  for (const auto& list : gathered) order.insert(order.end(), list.begin(), list.end());
  return order;
}

std::vector<size_t> groupRunOrder(const std::vector<OpDesc>& descs) {
  std::vector<size_t> order(descs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<const Comm*> comms;
  for (const OpDesc& d : descs) {
    if (std::find(comms.begin(), comms.end(), d.comm) == comms.end()) comms.push_back(d.comm);
  }
  for (const Comm* c : comms) {
    std::vector<size_t> slots;
    std::vector<const OpDesc*> colls;
    for (size_t i = 0; i < descs.size(); ++i) {
      if (descs[i].comm != c || !isPlannedCollective(descs[i].kind)) continue;
      slots.push_back(i);
      colls.push_back(&descs[i]);
    }
    if (slots.size() < 2 || c == nullptr) continue;
    const std::vector<size_t> plan = collPlanOrder(c->nranks, colls);
    for (size_t k = 0; k < slots.size(); ++k) order[slots[k]] = slots[plan[k]];
  }
  return order;
}

void orderCollTasks(int nranks, std::vector<ProfTask*>* colls) {
  std::vector<const OpDesc*> owners;
  for (const ProfTask* t : *colls) owners.push_back(t->owner);
  std::vector<ProfTask*> ordered;
  for (const size_t i : collPlanOrder(nranks, owners)) ordered.push_back((*colls)[i]);
  *colls = std::move(ordered);
}

std::vector<P2pRound> p2pSchedule(int rank, int nranks) {
  std::vector<P2pRound> rounds;
  if (nranks <= 0) return rounds;
  int pow2 = 1;
  while (pow2 < nranks) pow2 *= 2;
  // groupSize is gcd(NCCL_MAX_DEV_WORK_P2P_PER_BATCH, 1 local rank) = 1: a group is one rank.
  uint32_t group_round = 0;
  uint32_t group_delta = 0;
  do {
    if (group_delta < uint32_t(nranks)) {
      const int delta = int(group_delta);
      rounds.push_back({(rank + delta) % nranks, (rank - delta + nranks) % nranks});
    }
    group_round += 1;
    group_delta = (group_delta + group_round) & uint32_t(pow2 - 1);
  } while (group_round != uint32_t(pow2));
  return rounds;
}

std::vector<size_t> p2pPlanOrder(int rank, int nranks, const std::vector<bool>& send,
                                 const std::vector<int>& peer) {
  std::vector<size_t> order;
  order.reserve(peer.size());
  if (nranks <= 0) return order;
  std::vector<std::deque<size_t>> sends(static_cast<size_t>(nranks));
  std::vector<std::deque<size_t>> recvs(static_cast<size_t>(nranks));
  std::vector<size_t> unscheduled;
  for (size_t i = 0; i < peer.size(); ++i) {
    if (peer[i] < 0 || peer[i] >= nranks) {
      unscheduled.push_back(i);
      continue;
    }
    (send[i] ? sends : recvs)[size_t(peer[i])].push_back(i);
  }
  const std::vector<P2pRound> rounds = p2pSchedule(rank, nranks);
  for (size_t left = peer.size() - unscheduled.size(); left != 0;) {
    for (const P2pRound& round : rounds) {
      for (std::deque<size_t>* queue :
           {&sends[size_t(round.send_rank)], &recvs[size_t(round.recv_rank)]}) {
        if (queue->empty()) continue;
        order.push_back(queue->front());
        queue->pop_front();
        --left;
      }
    }
  }
  order.insert(order.end(), unscheduled.begin(), unscheduled.end());
  return order;
}

void orderP2pTasks(int rank, int nranks, std::vector<ProfTask*>* p2ps) {
  std::vector<bool> send;
  std::vector<int> peer;
  for (const ProfTask* t : *p2ps) {
    send.push_back(t->send);
    peer.push_back(t->peer);
  }
  std::vector<ProfTask*> ordered;
  ordered.reserve(p2ps->size());
  for (const size_t i : p2pPlanOrder(rank, nranks, send, peer)) ordered.push_back((*p2ps)[i]);
  *p2ps = std::move(ordered);
}

}  // namespace ncclsim
