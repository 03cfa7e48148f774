// The content hash of a collective's buffer (docs/collectives.md "Numerics passes"): a
// 64-bit value that ranks compare across the job, so its definition below is a wire contract
// (kContentHashVersion): a rank that computes it differently must say so with another version.
// The CUDA kernel (kernels/numerics.cu) and its CPU twin (numerics_twin.cpp) both run
// HashThreadShare. Plain C++ that nvcc compiles for the device too: no library calls.
//
// Definition (version 1). For a buffer of L bytes b[0..L):
//   m     = ceil(L / 8) words; word w_i = b[8i] | b[8i+1] << 8 | ... | b[8i+7] << 56
//           (little-endian), the bytes past L of the last word taken as 0
//   F(z)  = splitmix64's finalizer:  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//                                    z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//                                    F = z ^ (z >> 31)
//   T(w, i) = F(w + (i + 1) * 0x9E3779B97F4A7C15)      (the term of word w at index i)
//   H(b)  = F(L ^ 0x6E756D6572696373) + sum_{i < m} T(w_i, i)      all arithmetic mod 2^64
// (0x9E3779B97F4A7C15 is splitmix64's increment: T(w, i) is splitmix64's (i+1)-th output from
// the state w; 0x6E756D6572696373 is "numerics" in ASCII.)
//
// Why these properties hold:
// - Any grid gives the same value: H is a sum mod 2^64 (associative, commutative) of terms that
//   each depend on one word and its index only, so any split of the words among blocks and
//   threads, added in any order (atomicAdd), gives H bit for bit.
// - A single flipped bit always changes H (exactly, not with high probability): for a fixed i,
//   w -> T(w, i) is a bijection of 64-bit words (adding a constant is one; x -> x ^ (x >> s) for
//   s > 0 is one, its inverse recovering the bits from the top down; multiplying by an odd
//   constant is one mod 2^64; F composes them). A bit of b[0..L) lies in exactly one word w_k;
//   flipping it changes w_k to w'_k != w_k and no other word, and leaves L. So
//   H' - H = T(w'_k, k) - T(w_k, k) != 0 mod 2^64. The same holds for any change confined to one
//   8-byte word.
// - Order dependence: the index enters each term through the nonlinear F, so swapping two
//   different words w_i, w_j changes H unless T(w_i,i) + T(w_j,j) = T(w_j,i) + T(w_i,j), a chance
//   coincidence of 64-bit values (tested, not proven).
// - Buffers of different lengths differ in the length term, so zero padding of the last word does
//   not make "ab" and "ab\0" equal.
#pragma once

#include <cstdint>

#include "collectives/types/accel_types.h"

namespace ncclscope::collectives {

inline constexpr uint32_t kContentHashVersion = 1;
inline constexpr uint64_t kHashIndexStep = 0x9E3779B97F4A7C15ull;
inline constexpr uint64_t kHashLengthSeed = 0x6E756D6572696373ull;

NCCLSCOPE_HOST_DEVICE constexpr uint64_t HashFinalizer(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// T(w, i): the term of the word w at word index i.
NCCLSCOPE_HOST_DEVICE constexpr uint64_t HashWordTerm(uint64_t word, uint64_t index) {
  return HashFinalizer(word + (index + 1) * kHashIndexStep);
}

// The term of the buffer's length in bytes.
NCCLSCOPE_HOST_DEVICE constexpr uint64_t HashLengthTerm(uint64_t length) {
  return HashFinalizer(length ^ kHashLengthSeed);
}

// Where the hash kernel adds its blocks' sums (atomicAdd): memory the host supplies with sum 0
// and reads after the launch; it then holds H.
struct ContentHashResult {
  uint64_t sum;
};

#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
// One thread's share of H over `length` bytes read through `bytes` (numerics_scan.h's Bytes) by a
// grid of `threads` threads, this being thread `thread`: when the buffer starts on 16 bytes, whole
// packs k = thread, thread + threads, ... (words 2k and 2k+1); then the whole words after them
// (all of them when it does not) in the same stride; thread 0 also adds the length term and the
// last, partial word. Every term is added by exactly one thread of any grid.
template <typename Bytes>
NCCLSCOPE_HOST_DEVICE uint64_t HashThreadShare(Bytes& bytes, uint64_t length, uint64_t thread,
                                               uint64_t threads) {
  const uint64_t whole_words = length / 8;
  uint64_t sum = 0;
  uint64_t packed_words = 0;
  if (bytes.PackAligned()) {
    const uint64_t packs = length / 16;
    for (uint64_t k = thread; k < packs; k += threads) {
      uint64_t lo;
      uint64_t hi;
      bytes.Pack(k, &lo, &hi);
      sum += HashWordTerm(lo, 2 * k) + HashWordTerm(hi, 2 * k + 1);
    }
    packed_words = 2 * packs;
  }
  for (uint64_t i = packed_words + thread; i < whole_words; i += threads) {
    sum += HashWordTerm(bytes.Run(8 * i, 8), i);
  }
  if (thread == 0) {
    sum += HashLengthTerm(length);
    const uint32_t tail = static_cast<uint32_t>(length % 8);
    if (tail != 0) sum += HashWordTerm(bytes.Run(8 * whole_words, tail), whole_words);
  }
  return sum;
}

}  // namespace ncclscope::collectives
