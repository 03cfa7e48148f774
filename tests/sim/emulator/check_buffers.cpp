#include "tests/sim/emulator/check_buffers.h"

#include "sim/emulator/reduce_kernels.h"
#include "tests/sim/emulator/rank_harness.h"

namespace ncclsim_test {

const char* dtypeName(ncclDataType_t dt) {
  static const char* names[] = {"int8",    "uint8",    "int32",      "uint32",
                                "int64",   "uint64",   "float16",    "float32",
                                "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  return int(dt) >= 0 && int(dt) < 12 ? names[int(dt)] : "?";
}

const char* redOpName(ncclRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return int(op) >= 0 && int(op) < 5 ? names[int(op)] : "premulsum";
}

TypedBuffer::TypedBuffer(ncclDataType_t d, size_t n)
    : dt(d), count(n), bytes(n * ncclsim::dtypeSize(d) + 1) {}

void TypedBuffer::set(size_t i, double v) {
  ncclsim::storeFromDouble(bytes.data(), i, dt, v);
}

double TypedBuffer::get(size_t i) const {
  return ncclsim::loadAsDouble(bytes.data(), i, dt);
}

void TypedBuffer::fill(const std::function<double(size_t)>& f) {
  for (size_t i = 0; i < count; ++i) set(i, f(i));
}

int expectValues(const TypedBuffer& buf, size_t n, const std::function<double(size_t)>& want,
                 int rank, const std::string& what) {
  int bad = 0;
  for (size_t i = 0; i < n; ++i) {
    double got = buf.get(i);
    double w = want(i);
    if (got == w) continue;
    if (++bad <= 3) {
      rankReport("rank %d %s dtype %s offset %zu: got %g want %g", rank, what.c_str(),
                 dtypeName(buf.dt), i, got, w);
    }
  }
  return bad;
}

}  // namespace ncclsim_test
