// Self-checking data for collective tests: values chosen so every result is exactly representable
// in every datatype (fp8 included), and a checker that names rank, op, dtype and offset.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace ncclsim_test {

const char* dtypeName(ncclDataType_t dt);
const char* redOpName(ncclRedOp_t op);  // built-in ops; anything else prints "premulsum"

// A host buffer of `count` elements of dt.
struct TypedBuffer {
  ncclDataType_t dt;
  size_t count;
  std::vector<char> bytes;
  TypedBuffer(ncclDataType_t d, size_t n);
  void* data() { return bytes.data(); }
  void set(size_t i, double v);
  double get(size_t i) const;
  void fill(const std::function<double(size_t)>& f);
};

// Compares buf[i] with want(i) for i < n; reports up to 3 mismatches through rankReport. Returns
// the number of mismatches.
int expectValues(const TypedBuffer& buf, size_t n, const std::function<double(size_t)>& want,
                 int rank, const std::string& what);

}  // namespace ncclsim_test
