// Appends protobuf wire-format fields to a byte string, with protobuf's own encoders
// (CodedOutputStream's *ToArray helpers, WireFormatLite's tags). The timeline writer encodes
// millions of packets: building a message object per packet costs several times more than
// appending its few fields directly. Field numbers come from the generated classes of
// perfetto_trace.proto, so the encoder cannot drift from the schema the tests decode with.
#pragma once

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace ncclscope::exporters::timeline {

class ProtoAppend {
 public:
  explicit ProtoAppend(std::string* out) : out_(out) {}

  void Varint(int field, uint64_t value) {
    Tag(field, WireFormat::WIRETYPE_VARINT);
    Raw(value);
  }
  void SignedInt(int field, int64_t value) { Varint(field, static_cast<uint64_t>(value)); }
  void Fixed64(int field, uint64_t value) {
    Tag(field, WireFormat::WIRETYPE_FIXED64);
    uint8_t buf[8];
    google::protobuf::io::CodedOutputStream::WriteLittleEndian64ToArray(value, buf);
    out_->append(reinterpret_cast<const char*>(buf), sizeof buf);
  }
  // A string, bytes or an already encoded submessage.
  void Bytes(int field, std::string_view bytes) {
    Header(field, bytes.size());
    out_->append(bytes.data(), bytes.size());
  }
  // Only the tag and length of a length-delimited field, its `size` bytes written elsewhere.
  void Header(int field, size_t size) {
    Tag(field, WireFormat::WIRETYPE_LENGTH_DELIMITED);
    Raw(size);
  }

 private:
  using WireFormat = google::protobuf::internal::WireFormatLite;
  void Tag(int field, WireFormat::WireType type) { Raw(WireFormat::MakeTag(field, type)); }
  void Raw(uint64_t value) {
    uint8_t buf[10];
    uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(value, buf);
    out_->append(reinterpret_cast<const char*>(buf), static_cast<size_t>(end - buf));
  }
  std::string* out_;
};

}  // namespace ncclscope::exporters::timeline
