#include "sim/emulator/comm.h"

#include <sys/random.h>
#include <unistd.h>

#include <cstring>

#include "sim/emulator/backoff_wait.h"
#include "sim/emulator/bootstrap.h"
#include "sim/emulator/env_config.h"
#include "sim/emulator/link_model.h"

namespace ncclsim {

namespace {

constexpr uint64_t kIdMagic = 0x316d69736c63636eull;  // "ncclsim1"

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

uint64_t hashUniqueId(const ncclUniqueId& id) {
  return fnv1a(id.internal, sizeof(id.internal));
}

ncclUniqueId deriveUniqueId(uint64_t parent_hash, uint64_t a, uint64_t b, uint64_t c) {
  ncclUniqueId id{};
  uint64_t words[4] = {parent_hash, a, b, c};
  uint64_t h = fnv1a(words, sizeof(words));
  std::memcpy(id.internal, &kIdMagic, 8);
  std::memcpy(id.internal + 8, &h, 8);
  std::memcpy(id.internal + 16, words, sizeof(words));
  return id;
}

ncclUniqueId makeUniqueId() {
  ncclUniqueId id{};
  std::memcpy(id.internal, &kIdMagic, 8);
  size_t got = 0;
  while (got < sizeof(id.internal) - 8) {
    ssize_t r = getrandom(id.internal + 8 + got, sizeof(id.internal) - 8 - got, 0);
    if (r <= 0) break;
    got += size_t(r);
  }
  if (got < sizeof(id.internal) - 8) {
    // No entropy source: pid and time still separate concurrent jobs on one machine.
    uint64_t fallback[2] = {uint64_t(getpid()), nowNs()};
    std::memcpy(id.internal + 8, fallback, sizeof(fallback));
  }
  return id;
}

ncclResult_t commCreate(const ncclUniqueId& id, int nranks, int rank, int cuda_dev, bool wait,
                        Comm** out) {
  initLinkModel();
  SegmentLayout layout = SegmentLayout::forRanks(nranks);
  auto* c = new Comm;
  c->id = id;
  c->id_hash = hashUniqueId(id);
  c->shm_name = segmentName(c->id_hash);
  c->rank = rank;
  c->nranks = nranks;
  c->cuda_dev = cuda_dev;
  std::string err;
  if (!mapSegment(c->shm_name, layout.total_bytes, &c->mapping, &err)) {
    warnOnce("map:" + c->shm_name, err);
    delete c;
    return ncclSystemError;
  }
  c->seg = SegmentView(c->mapping.base, layout);
  uint32_t expected = 0;
  SegmentHeader* h = c->seg.header();
  if (!h->nranks.compare_exchange_strong(expected, uint32_t(nranks)) &&
      expected != uint32_t(nranks)) {
    warnOnce("nranks:" + c->shm_name, "ranks disagree on nranks for communicator " + c->shm_name);
    unmapSegment(&c->mapping);
    delete c;
    return ncclInvalidUsage;
  }
  c->out_next.assign(size_t(nranks), 0);
  c->in_next.assign(size_t(nranks), 0);
  c->out_serving.reset(new std::atomic<uint64_t>[size_t(nranks)]);
  c->in_serving.reset(new std::atomic<uint64_t>[size_t(nranks)]);
  for (int p = 0; p < nranks; ++p) {
    c->out_serving[p].store(0);
    c->in_serving[p].store(0);
  }
  uint8_t blob[kBlobBytes] = {};
  int32_t pid = getpid();
  std::memcpy(blob, &pid, sizeof(pid));
  c->boot_round = 1;
  bootstrapPublish(c->seg, rank, c->boot_round, blob);
  *out = c;
  if (wait) commFinishJoin(c);
  return ncclSuccess;
}

bool commPollJoin(Comm* comm) {
  if (comm->joined.load(std::memory_order_acquire)) return true;
  if (!bootstrapPoll(comm->seg, comm->nranks, 1, nullptr)) return false;
  unlinkSegment(comm->shm_name);
  comm->joined.store(true, std::memory_order_release);
  return true;
}

void commFinishJoin(Comm* comm) {
  Backoff backoff;
  while (!commPollJoin(comm)) backoff.pause();
}

void commWaitIdle(Comm* comm) {
  Backoff backoff;
  while (comm->inflight.load(std::memory_order_acquire) > 0) backoff.pause();
}

}  // namespace ncclsim
