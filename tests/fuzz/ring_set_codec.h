// The correlator fuzz target's input: a set of ring files in a compact form, so that mutations
// land on the bytes the readers interpret (header fields, comm entries, records) rather than on the
// zero padding that makes up most of a small ring file.
//
// Every ring has the seeds' geometry: kCommCapacity comm entries, kRecordCapacity slots. Its
// compact form is the FileHeader struct, then the comm table, then the slots written so far;
// expanding it puts each section back at its offset in a full-size image (padding and unwritten
// slots zero). Cut short inside the header or comm table, the image is cut at that point (a
// truncated file); cut short among the slots, the image keeps its size and lacks those slots.
//
// The input: a 24-byte preamble (byte 0 the number of rings mod kMaxRings + 1, byte 1 analysis
// options, then a little-endian uint16 compact length per ring), then the compact rings one after
// another (lengths past the end of the input are cut to what is left). Pure functions;
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ncclscope::fuzz {

inline constexpr uint32_t kCommCapacity = 4;
inline constexpr uint64_t kRecordCapacity = 64;  // the writer's smallest ring
inline constexpr size_t kMaxRings = 8;

// An image 8-byte aligned, as the readers' atomic loads want it.
struct RingImage {
  std::vector<uint64_t> words;
  size_t size = 0;
  const void* data() const { return words.data(); }
};

struct RingSetInput {
  uint8_t options = 0;
  std::vector<RingImage> rings;
};

// A ring file of the seeds' geometry, in compact form.
std::string CompactRing(const std::string& file_bytes);
// A fuzz input from compact rings.
std::string EncodeRingSet(const std::vector<std::string>& compact_rings, uint8_t options);
RingSetInput DecodeRingSet(const uint8_t* data, size_t size);

}  // namespace ncclscope::fuzz
