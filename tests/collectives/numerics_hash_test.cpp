// The content hash (collectives/numerics/numerics_hash.h) and its CPU twin: the values the contract
// defines (computed here byte by byte from the definition, and pinned for a few buffers), the same
// value under any grid and any alignment, every single flipped bit detected, order dependence,
// lengths.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "collectives/numerics/numerics_twin.h"

namespace ncclscope::collectives {
namespace {

// H written from the header's definition, one byte at a time, with no packs and no grid.
uint64_t ReferenceHash(const unsigned char* b, uint64_t length) {
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  uint64_t h = mix(length ^ 0x6E756D6572696373ull);
  for (uint64_t i = 0; 8 * i < length; ++i) {
    uint64_t w = 0;
    for (uint64_t k = 0; k < 8 && 8 * i + k < length; ++k) {
      w |= static_cast<uint64_t>(b[8 * i + k]) << (8 * k);
    }
    h += mix(w + (i + 1) * 0x9E3779B97F4A7C15ull);
  }
  return h;
}

// `length` random bytes starting `offset` bytes past a 16-byte boundary.
struct Bytes {
  std::vector<unsigned char> storage;
  unsigned char* data;

  Bytes(size_t length, size_t offset, uint32_t seed) : storage(length + offset + 16) {
    auto* base = storage.data();
    base += (16 - reinterpret_cast<uintptr_t>(base) % 16) % 16;
    data = base + offset;
    std::mt19937 rng(seed);
    for (size_t i = 0; i < length; ++i) data[i] = static_cast<unsigned char>(rng());
  }
};

// The contract's values, pinned: a change here is a change of the wire contract
// (kContentHashVersion). Computed independently from the definition (a Python script).
TEST(NumericsHash, PinnedValuesOfTheContract) {
  EXPECT_EQ(kContentHashVersion, 1u);
  EXPECT_EQ(ContentHashTwin(nullptr, 0), 0x08e0f1a835b86ad0ull);
  const unsigned char one = 1;
  EXPECT_EQ(ContentHashTwin(&one, 1), 0x09cd5eb10dc74270ull);
  unsigned char seq[16];
  for (int i = 0; i < 16; ++i) seq[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(ContentHashTwin(seq, 16), 0x1e95068542f63c1full);
  std::vector<unsigned char> big;
  for (int r = 0; r < 4; ++r) {
    for (int i = 0; i < 256; ++i) big.push_back(static_cast<unsigned char>(i));
  }
  big.insert(big.end(), {'a', 'b', 'c'});
  EXPECT_EQ(ContentHashTwin(big.data(), big.size()), 0x7e6ac69c34de2fc2ull);
}

// The twin's value equals the definition's for every length of a tail (0..15 bytes past whole
// packs), aligned on 16 bytes or not, under grids of many shapes: any split gives the same bits.
TEST(NumericsHash, AnyGridAndAnyAlignmentGiveTheDefinedValue) {
  const uint32_t blocks[] = {1, 2, 3, 5, 8, 33, 128};
  const uint32_t threads[] = {1, 2, 7, 32, 64, 512};
  for (size_t whole : {size_t{0}, size_t{16}, size_t{64}, size_t{4096}}) {
    for (size_t tail = 0; tail < 16; ++tail) {
      for (size_t offset : {size_t{0}, size_t{1}, size_t{4}, size_t{8}, size_t{15}}) {
        const size_t length = whole + tail;
        Bytes b(length, offset, static_cast<uint32_t>(length * 31 + offset));
        const uint64_t want = ReferenceHash(b.data, length);
        for (uint32_t bl : blocks) {
          for (uint32_t th : threads) {
            ASSERT_EQ(ContentHashTwin(b.data, length, bl, th), want)
                << "length " << length << " offset " << offset << " grid " << bl << "x" << th;
          }
        }
      }
    }
  }
}

TEST(NumericsHash, OneMebibyteIsSplitInvariantAndEqualForEqualContent) {
  const size_t length = (size_t{1} << 20) + 5;
  Bytes a(length, 0, 3);
  Bytes b(length, 3, 99);
  std::memcpy(b.data, a.data, length);  // the same content at another alignment
  const uint64_t want = ReferenceHash(a.data, length);
  const NumericsLaunch shape = NumericsLaunchShape(length, 132);
  EXPECT_EQ(ContentHashTwin(a.data, length), want);
  EXPECT_EQ(ContentHashTwin(a.data, length, shape.blocks, shape.threads), want);
  EXPECT_EQ(ContentHashTwin(b.data, length, shape.blocks, shape.threads), want);
  EXPECT_EQ(ContentHashTwin(b.data, length, 7, 100), want);
}

// Proven in numerics_hash.h; checked for every bit of every buffer up to 64 bytes.
TEST(NumericsHash, EverySingleBitFlipChangesTheHashOfSmallBuffers) {
  for (size_t length = 1; length <= 64; ++length) {
    Bytes b(length, 0, static_cast<uint32_t>(length));
    const uint64_t before = ContentHashTwin(b.data, length);
    std::set<uint64_t> seen{before};
    for (size_t bit = 0; bit < 8 * length; ++bit) {
      b.data[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
      const uint64_t after = ContentHashTwin(b.data, length, 2, 3);
      b.data[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
      ASSERT_NE(after, before) << "length " << length << " bit " << bit;
      seen.insert(after);
    }
    // Not implied by the proof but expected of 64-bit values: every flip gives its own hash.
    EXPECT_EQ(seen.size(), 8 * length + 1) << length;
  }
}

TEST(NumericsHash, SampledBitFlipsChangeTheHashOfOneMebibyte) {
  const size_t length = size_t{1} << 20;
  Bytes b(length, 0, 5);
  const NumericsLaunch shape = NumericsLaunchShape(length, 132);
  const uint64_t before = ContentHashTwin(b.data, length, shape.blocks, shape.threads);
  std::mt19937_64 rng(17);
  std::vector<size_t> bits = {0, 8 * length - 1, 8 * (length - 8), 63, 64};
  for (int i = 0; i < 300; ++i) bits.push_back(rng() % (8 * length));
  for (size_t bit : bits) {
    b.data[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    const uint64_t after = ContentHashTwin(b.data, length, shape.blocks, shape.threads);
    b.data[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    ASSERT_NE(after, before) << "bit " << bit;
  }
}

// Swapping two different elements (of 1, 2, 4 or 8 bytes, within a word or across words) changes
// the hash; so does reversing a buffer whose every element is distinct.
TEST(NumericsHash, SwappingTwoDifferentElementsChangesTheHash) {
  std::mt19937_64 rng(23);
  for (size_t elem : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
    const size_t n = 256 / elem;
    Bytes b(256, 0, static_cast<uint32_t>(elem));
    const uint64_t before = ContentHashTwin(b.data, 256);
    for (int trial = 0; trial < 2000; ++trial) {
      const size_t i = rng() % n;
      const size_t j = rng() % n;
      if (std::memcmp(b.data + i * elem, b.data + j * elem, elem) == 0) continue;
      unsigned char tmp[8];
      std::memcpy(tmp, b.data + i * elem, elem);
      std::memcpy(b.data + i * elem, b.data + j * elem, elem);
      std::memcpy(b.data + j * elem, tmp, elem);
      const uint64_t after = ContentHashTwin(b.data, 256, 3, 5);
      ASSERT_NE(after, before) << "element bytes " << elem << " swap " << i << "," << j;
      std::memcpy(b.data + j * elem, b.data + i * elem, elem);
      std::memcpy(b.data + i * elem, tmp, elem);
    }
  }
  std::vector<uint32_t> v(1000);
  for (uint32_t i = 0; i < 1000; ++i) v[i] = i;
  const uint64_t forward = ContentHashTwin(v.data(), 4000);
  std::vector<uint32_t> r(v.rbegin(), v.rend());
  EXPECT_NE(ContentHashTwin(r.data(), 4000), forward);
}

// Zero padding of the last word does not make buffers of different lengths equal.
TEST(NumericsHash, BuffersOfZerosOfEveryLengthDiffer) {
  std::vector<unsigned char> zeros(64, 0);
  std::set<uint64_t> seen;
  for (size_t length = 0; length <= 64; ++length) {
    seen.insert(ContentHashTwin(zeros.data(), length, 2, 4));
  }
  EXPECT_EQ(seen.size(), 65u);
}

// The kernel's entry adds into the result the host supplied ({0}), as the GPU's atomicAdd does.
TEST(NumericsHash, TheKernelEntryAddsIntoTheSuppliedResult) {
  Bytes b(1000, 0, 41);
  ContentHashResult result{0};
  RunContentHashTwinKernel({b.data, 1000, &result}, 3, 32);
  EXPECT_EQ(result.sum, ReferenceHash(b.data, 1000));
  ContentHashResult none{0};
  RunContentHashTwinKernel({b.data, 1000, &none}, 0, 32);
  EXPECT_EQ(none.sum, 0u);
}

}  // namespace
}  // namespace ncclscope::collectives
