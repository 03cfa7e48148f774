#include "sim/emulator/op_run.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "sim/emulator/output_faults.h"

namespace ncclsim {

OpRun::OpRun(const OpDesc& desc, bool proxy_now) : d_(desc) {
  {
    std::lock_guard<std::mutex> lock(d_.comm->issue_mu);
    buildPlan(d_, &p_);
    prof_ = ProxyTracker::make(d_, p_);
    d_.comm->inflight.fetch_add(1, std::memory_order_acq_rel);
  }
  // NCCL hands the proxy its work at launch, not when the kernel runs (proxy_thread.h).
  if (proxy_now) handOffProxyWork();
}

void OpRun::handOffProxyWork() {
  if (prof_ != nullptr) prof_->launch();
}

OpRun::~OpRun() {
  finish();
}

void OpRun::finish() {
  if (finished_) return;
  finished_ = true;
  if (prof_ != nullptr) prof_->end();
  d_.comm->inflight.fetch_sub(1, std::memory_order_acq_rel);
}

void OpRun::start(uint64_t now) {
  started_ = true;
  start_ns_ = now;
  if (prof_ != nullptr) prof_->begin();
  timing_ = currentLinkTiming();
  min_end_ns_ = timing_.arrival(now, p_.model_bytes, 1.0);
  const size_t S = p_.elem_size;
  // Device-resident factors are read when the operation runs, as on the GPU.
  std::memcpy(scalar_, d_.scalar_ptr ? d_.scalar_ptr : d_.scalar, dtypeSize(d_.dtype));
  if (!p_.send_copy.empty()) {
    std::memcpy(p_.send_copy.data(), p_.send_copy_src, p_.send_copy.size());
  }
  FoldPlan& f = p_.fold;
  if (f.active) {
    if (d_.red == RedKind::kPreMulSum) {
      scaleCopy(f.own.data(), f.own_src, f.elems, d_.dtype, scalar_);
    } else {
      std::memcpy(f.own.data(), f.own_src, f.elems * S);
    }
  }
  for (const LocalCopy& c : p_.copies) std::memmove(c.dst, c.src, c.bytes);
  foldLocal();
}

size_t OpRun::foldChunkElems() const {
  const FoldPlan& f = p_.fold;
  return std::min(p_.chunk_elems, f.elems - f.chunk * p_.chunk_elems);
}

bool OpRun::foldExpects(int peer, const ChunkHeader& h) const {
  const FoldPlan& f = p_.fold;
  return f.active && f.done_elems < f.elems && f.next == peer &&
         h.offset == f.chunk * p_.chunk_elems && h.nelems == foldChunkElems();
}

// Folds one contribution into the current chunk: the first rank's is copied, later ones combined,
// and after the last rank the chunk is final (divided for ncclAvg).
void OpRun::foldApply(const char* src) {
  FoldPlan& f = p_.fold;
  size_t off = f.chunk * p_.chunk_elems;
  size_t n = foldChunkElems();
  char* dst = f.dst + off * p_.elem_size;
  if (f.next == 0) {
    std::memcpy(dst, src, n * p_.elem_size);
  } else {
    foldInto(dst, src, n, d_.dtype, d_.red);
  }
  if (++f.next == d_.comm->nranks) {
    if (d_.red == RedKind::kAvg) divideBy(dst, n, d_.dtype, d_.comm->nranks);
    f.done_elems += n;
    ++f.chunk;
    f.next = 0;
  }
}

void OpRun::foldLocal() {
  FoldPlan& f = p_.fold;
  while (f.active && f.done_elems < f.elems && f.next == d_.comm->rank) {
    foldApply(f.own.data() + f.chunk * p_.chunk_elems * p_.elem_size);
  }
}

bool OpRun::pushOut(OutFlow& f, uint64_t now) {
  Comm* c = d_.comm;
  const int me = c->rank;
  if (f.pushed) {
    if (!f.consumed &&
        c->seg.ring(me, f.peer)->tail.load(std::memory_order_acquire) >= f.end_head) {
      f.consumed = true;
      return true;
    }
    return false;
  }
  if (c->out_serving[f.peer].load(std::memory_order_acquire) != f.ticket) return false;
  RingControl* ring = c->seg.ring(me, f.peer);
  bool moved = false;
  f.ring_full = false;
  uint64_t head = ring->head.load(std::memory_order_relaxed);
  while (f.piece < f.pieces.size()) {
    const OutPiece& pc = f.pieces[f.piece];
    if (f.piece_off == pc.elems) {
      ++f.piece;
      f.piece_off = 0;
      continue;
    }
    size_t n = std::min(p_.chunk_elems, pc.elems - f.piece_off);
    if (pc.gated && p_.fold.done_elems < f.piece_off + n) break;
    if (head - ring->tail.load(std::memory_order_acquire) >= kRingSlots) {
      f.ring_full = true;
      break;
    }
    ChunkHeader* h = c->seg.slotHeader(me, f.peer, head);
    char* data = c->seg.slotData(me, f.peer, head);
    const char* src = pc.src + f.piece_off * p_.elem_size;
    if (pc.premul) {
      scaleCopy(data, src, n, d_.dtype, scalar_);
    } else {
      std::memcpy(data, src, n * p_.elem_size);
    }
    f.sent += n;
    double frac = double(f.sent) / double(f.total);
    h->sig = f.sig;
    // A hung link (ncclsimSetLinkHung) publishes chunks that never arrive.
    h->visible_ns =
        linkHung() ? UINT64_MAX : std::max(now, timing_.arrival(start_ns_, p_.model_bytes, frac));
    h->offset = f.piece_off;
    h->nelems = uint32_t(n);
    h->phase = pc.phase;
    ring->head.store(++head, std::memory_order_release);
    if (prof_ != nullptr) prof_->pushed(size_t(&f - p_.outs.data()), f.sent, head);
    f.piece_off += n;
    moved = true;
  }
  if (f.piece == f.pieces.size()) {
    f.pushed = true;
    f.end_head = head;
    c->out_serving[f.peer].store(f.ticket + 1, std::memory_order_release);
    moved = true;
  }
  return moved;
}

bool OpRun::pullIn(InFlow& f, uint64_t now, uint64_t* wake_ns) {
  Comm* c = d_.comm;
  const int me = c->rank;
  if (f.done || c->in_serving[f.peer].load(std::memory_order_acquire) != f.ticket) return false;
  RingControl* ring = c->seg.ring(f.peer, me);
  bool moved = false;
  uint64_t tail = ring->tail.load(std::memory_order_relaxed);
  while (tail < ring->head.load(std::memory_order_acquire)) {
    const ChunkHeader h = *c->seg.slotHeader(f.peer, me, tail);
    // A chunk of another operation (the ranks disagree): never consume it. This op, and the peer's,
    // then never complete, which is what NCCL does in effect.
    if (h.sig != f.sig) break;
    double frac = double(f.got0 + f.got1 + h.nelems) / double(f.want0 + f.want1);
    uint64_t ready = std::max(h.visible_ns, timing_.arrival(start_ns_, p_.model_bytes, frac));
    if (now < ready) {
      *wake_ns = std::min(*wake_ns, ready);
      break;
    }
    const char* data = c->seg.slotData(f.peer, me, tail);
    if (h.phase == 1) {
      bool valid = h.offset % p_.chunk_elems == 0 && h.offset < f.dst1_elems &&
                   h.nelems == std::min(p_.chunk_elems, f.dst1_elems - h.offset) &&
                   f.got1 + h.nelems <= f.want1;
      if (!valid) break;
      std::memcpy(f.dst1 + h.offset * p_.elem_size, data, h.nelems * p_.elem_size);
      f.got1 += h.nelems;
    } else {
      if (h.phase != 0 || f.got0 + h.nelems > f.want0 || !foldExpects(f.peer, h)) break;
      foldApply(data);
      foldLocal();
      f.got0 += h.nelems;
    }
    ring->tail.store(++tail, std::memory_order_release);
    moved = true;
    if (f.got0 == f.want0 && f.got1 == f.want1) {
      f.done = true;
      c->in_serving[f.peer].store(f.ticket + 1, std::memory_order_release);
      break;
    }
  }
  return moved;
}

bool OpRun::progress(uint64_t now, uint64_t* wake_ns) {
  if (finished_) return false;
  if (commStopped(d_.comm)) {
    finish();  // abandoned by abort/revoke; the comm is unusable from now on
    return true;
  }
  bool moved = false;
  if (!started_) {
    start(now);
    moved = true;
  }
  bool all = true;
  for (InFlow& f : p_.ins) {
    moved |= pullIn(f, now, wake_ns);
    all &= f.done;
  }
  for (OutFlow& f : p_.outs) {
    moved |= pushOut(f, now);
    all &= f.consumed;
  }
  // Nothing completes before the proxy thread took the operation (in NCCL the proxy moves a
  // network transfer's data); read first, so that the update below has seen every step posted.
  const bool appended = prof_ == nullptr || prof_->appended();
  if (prof_ != nullptr) prof_->update(p_);
  all &= appended && (!p_.fold.active || p_.fold.done_elems == p_.fold.elems);
  if (all) {
    if (now >= min_end_ns_) {
      // A faulty GPU's wrong bits: in the output once it is final, before the stream moves on.
      applyOutputFlip(d_);
      finish();
      return true;
    }
    *wake_ns = std::min(*wake_ns, min_end_ns_);
  }
  return moved;
}

}  // namespace ncclsim
