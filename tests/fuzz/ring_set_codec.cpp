#include "tests/fuzz/ring_set_codec.h"

#include <algorithm>
#include <cstring>

#include "trace/ring_layout.h"

namespace ncclscope::fuzz {
namespace {

using trace::CommEntry;
using trace::FileHeader;
using trace::RecordSlot;

constexpr size_t kCommBytes = kCommCapacity * sizeof(CommEntry);
constexpr size_t kCommTableBytes = (kCommBytes + 4095) & ~size_t{4095};
constexpr size_t kRecordsOffset = trace::kHeaderBytes + kCommTableBytes;
constexpr size_t kFileBytes = kRecordsOffset + kRecordCapacity * sizeof(RecordSlot);

// (compact offset, image offset, length) of each section.
struct Section {
  size_t compact, image, length;
};
constexpr Section kSections[] = {
    {0, 0, sizeof(FileHeader)},
    {sizeof(FileHeader), trace::kHeaderBytes, kCommBytes},
    {sizeof(FileHeader) + kCommBytes, kRecordsOffset, kRecordCapacity * sizeof(RecordSlot)},
};
constexpr size_t kSlotsCompact = sizeof(FileHeader) + kCommBytes;
// Count, options, a length per ring, padded so that the rings' 8-byte fields sit on the 8-byte
// boundaries where the mutation driver stores its boundary values.
constexpr size_t kPreambleBytes = (2 + 2 * kMaxRings + 7) & ~size_t{7};
static_assert(sizeof(FileHeader) % 8 == 0 && kCommBytes % 8 == 0);

RingImage Expand(const uint8_t* compact, size_t size) {
  RingImage image;
  if (size >= kSlotsCompact) {
    image.size = kFileBytes;
  } else {
    for (const Section& s : kSections) {  // cut in the header or the table: a truncated file
      if (size > s.compact) image.size = s.image + std::min(size - s.compact, s.length);
    }
  }
  image.words.assign((image.size + 7) / 8, 0);
  auto* out = reinterpret_cast<uint8_t*>(image.words.data());
  for (const Section& s : kSections) {
    if (size <= s.compact) break;
    std::memcpy(out + s.image, compact + s.compact, std::min(s.length, size - s.compact));
  }
  return image;
}

}  // namespace

std::string CompactRing(const std::string& file_bytes) {
  if (file_bytes.size() != kFileBytes) return "";
  const auto& h = *reinterpret_cast<const FileHeader*>(file_bytes.data());
  const uint64_t slots = std::min<uint64_t>(h.write_pos.load(), kRecordCapacity);
  std::string out;
  out.append(file_bytes, kSections[0].image, kSections[0].length);
  out.append(file_bytes, kSections[1].image, kSections[1].length);
  out.append(file_bytes, kSections[2].image, slots * sizeof(RecordSlot));
  return out;
}

std::string EncodeRingSet(const std::vector<std::string>& compact_rings, uint8_t options) {
  std::string out(kPreambleBytes, '\0');
  out[0] = static_cast<char>(std::min(compact_rings.size(), kMaxRings));
  out[1] = static_cast<char>(options);
  for (size_t i = 0; i < compact_rings.size() && i < kMaxRings; ++i) {
    out[2 + 2 * i] = static_cast<char>(compact_rings[i].size() & 0xff);
    out[3 + 2 * i] = static_cast<char>(compact_rings[i].size() >> 8);
    out += compact_rings[i];
  }
  return out;
}

RingSetInput DecodeRingSet(const uint8_t* data, size_t size) {
  RingSetInput in;
  if (size < kPreambleBytes) return in;
  const size_t n = data[0] % (kMaxRings + 1);
  in.options = data[1];
  size_t at = kPreambleBytes;
  for (size_t i = 0; i < n; ++i) {
    const size_t length = std::min(data[2 + 2 * i] | size_t{data[3 + 2 * i]} << 8, size - at);
    in.rings.push_back(Expand(data + at, length));
    at += length;
  }
  return in;
}

}  // namespace ncclscope::fuzz
