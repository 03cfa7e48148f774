#include "sim/emulator/op_plan.h"

namespace ncclsim {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

// What every participant must agree on. Send and Recv share one class and compare bytes only.
uint64_t baseSignature(const OpDesc& d) {
  bool p2p = d.kind == OpKind::kSend || d.kind == OpKind::kRecv;
  uint64_t h = mix(0x6e63636c, p2p ? 99 : uint64_t(d.kind));
  if (p2p) return mix(h, d.count * dtypeSize(d.dtype));
  h = mix(h, d.count);
  h = mix(h, uint64_t(d.dtype));
  bool rooted = d.kind == OpKind::kBroadcast || d.kind == OpKind::kReduce ||
                d.kind == OpKind::kGather || d.kind == OpKind::kScatter;
  if (rooted) h = mix(h, uint64_t(d.root));
  bool reducing =
      d.kind == OpKind::kAllReduce || d.kind == OpKind::kReduce || d.kind == OpKind::kReduceScatter;
  if (reducing) h = mix(h, uint64_t(d.red));
  return h;
}

class Builder {
 public:
  Builder(const OpDesc& d, OpPlan* p) : d_(d), p_(p), base_(baseSignature(d)) {}

  void out(int peer, std::vector<OutPiece> pieces) {
    size_t total = 0;
    for (const OutPiece& pc : pieces) total += pc.elems;
    if (total == 0) return;
    uint64_t ticket = d_.comm->out_next[size_t(peer)]++;
    p_->outs.push_back(OutFlow{peer, ticket, mix(base_, ticket), std::move(pieces), total});
  }

  void in(int peer, size_t want0, size_t want1, char* dst1) {
    if (want0 + want1 == 0) return;
    uint64_t ticket = d_.comm->in_next[size_t(peer)]++;
    InFlow f{peer, ticket, mix(base_, ticket)};
    f.want0 = want0;
    f.want1 = want1;
    f.dst1 = dst1;
    f.dst1_elems = want1;
    p_->ins.push_back(f);
  }

  void fold(char* dst, size_t elems, const char* own_src) {
    if (elems == 0) return;
    p_->fold.active = true;
    p_->fold.dst = dst;
    p_->fold.elems = elems;
    p_->fold.own_src = own_src;
    p_->fold.own.resize(elems * p_->elem_size);
  }

  void copy(const char* src, char* dst, size_t elems) {
    if (elems != 0 && src != dst) p_->copies.push_back(LocalCopy{src, dst, elems * p_->elem_size});
  }

 private:
  const OpDesc& d_;
  OpPlan* p_;
  uint64_t base_;
};

}  // namespace

void buildPlan(const OpDesc& d, OpPlan* p) {
  const int n = d.comm->nranks;
  const int me = d.comm->rank;
  const bool p2p = d.kind == OpKind::kSend || d.kind == OpKind::kRecv;
  const size_t S = p2p ? 1 : dtypeSize(d.dtype);
  const size_t count = p2p ? d.count * dtypeSize(d.dtype) : d.count;
  p->elem_size = S;
  p->chunk_elems = d.comm->seg.layout().chunk_bytes / S;
  const bool premul = d.red == RedKind::kPreMulSum;
  const char* send = static_cast<const char*>(d.send);
  char* recv = static_cast<char*>(d.recv);
  auto at = [S](const char* b, size_t elems) { return b + elems * S; };
  auto atw = [S](char* b, size_t elems) { return b + elems * S; };
  Builder b(d, p);
  double bytes = double(count * S);

  switch (d.kind) {
    case OpKind::kAllReduce: {
      auto lo = [&](int r) { return count * size_t(r) / size_t(n); };
      auto len = [&](int r) { return lo(r + 1) - lo(r); };
      b.fold(atw(recv, lo(me)), len(me), at(send, lo(me)));
      for (int q = 0; q < n; ++q) {
        if (q == me) continue;
        b.out(q, {{0, at(send, lo(q)), len(q), false, premul},
                  {1, atw(recv, lo(me)), len(me), true, false}});
        b.in(q, len(me), len(q), atw(recv, lo(q)));
      }
      break;
    }
    case OpKind::kReduceScatter:
      bytes *= n;
      b.fold(recv, count, at(send, size_t(me) * count));
      for (int q = 0; q < n; ++q) {
        if (q == me) continue;
        b.out(q, {{0, at(send, size_t(q) * count), count, false, premul}});
        b.in(q, count, 0, nullptr);
      }
      break;
    case OpKind::kReduce:
      if (me == d.root) {
        b.fold(recv, count, send);
        for (int q = 0; q < n; ++q) {
          if (q != me) b.in(q, count, 0, nullptr);
        }
      } else {
        b.out(d.root, {{0, send, count, false, premul}});
      }
      break;
    case OpKind::kBroadcast:
      if (me == d.root) {
        b.copy(send, recv, count);
        for (int q = 0; q < n; ++q) {
          if (q != me) b.out(q, {{1, send, count, false, false}});
        }
      } else {
        b.in(d.root, 0, count, recv);
      }
      break;
    case OpKind::kAllGather:
      bytes *= n;
      b.copy(send, atw(recv, size_t(me) * count), count);
      for (int q = 0; q < n; ++q) {
        if (q == me) continue;
        b.out(q, {{1, send, count, false, false}});
        b.in(q, 0, count, atw(recv, size_t(q) * count));
      }
      break;
    case OpKind::kAlltoAll: {
      bytes *= n;
      const char* src = send;
      size_t total = count * size_t(n) * S;
      bool overlap = send < recv + total && recv < send + total;
      if (overlap) {
        // Peers' blocks may land in recv before ours were pushed; push from a copy taken at start.
        p->send_copy.resize(total);
        p->send_copy_src = send;
        src = p->send_copy.data();
      }
      b.copy(at(src, size_t(me) * count), atw(recv, size_t(me) * count), count);
      for (int q = 0; q < n; ++q) {
        if (q == me) continue;
        b.out(q, {{1, at(src, size_t(q) * count), count, false, false}});
        b.in(q, 0, count, atw(recv, size_t(q) * count));
      }
      break;
    }
    case OpKind::kGather:
      bytes *= n;
      if (me == d.root) {
        b.copy(send, atw(recv, size_t(me) * count), count);
        for (int q = 0; q < n; ++q) {
          if (q != me) b.in(q, 0, count, atw(recv, size_t(q) * count));
        }
      } else {
        b.out(d.root, {{1, send, count, false, false}});
      }
      break;
    case OpKind::kScatter:
      bytes *= n;
      if (me == d.root) {
        b.copy(at(send, size_t(me) * count), recv, count);
        for (int q = 0; q < n; ++q) {
          if (q != me) b.out(q, {{1, at(send, size_t(q) * count), count, false, false}});
        }
      } else {
        b.in(d.root, 0, count, recv);
      }
      break;
    case OpKind::kSend:
      b.out(d.root, {{1, send, count, false, false}});
      break;
    case OpKind::kRecv:
      b.in(d.root, 0, count, recv);
      break;
  }
  p->model_bytes = bytes;
}

}  // namespace ncclsim
