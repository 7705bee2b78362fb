#include "h2grpc/message_framing.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace gpunode::h2grpc {
namespace {

constexpr size_t kPrefixBytes = 5;

}  // namespace

void AppendFramedMessage(std::string_view message, std::string& out) {
  const uint32_t length = static_cast<uint32_t>(message.size());
  out.push_back('\0');
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((length >> shift) & 0xff));
  }
  out.append(message);
}

absl::Status MessageReader::Append(std::string_view bytes) {
  if (!error_.ok()) return error_;
  buffer_.append(bytes);
  size_t offset = 0;
  while (buffer_.size() - offset >= kPrefixBytes) {
    const auto* prefix = reinterpret_cast<const unsigned char*>(buffer_.data() + offset);
    if (prefix[0] != 0) {
      error_ = prefix[0] == 1
                   ? absl::UnimplementedError(
                         "compressed message received, but no compression was negotiated")
                   : absl::InternalError(
                         absl::StrCat("invalid message flag ", static_cast<int>(prefix[0])));
      break;
    }
    const uint32_t length = (uint32_t{prefix[1]} << 24) | (uint32_t{prefix[2]} << 16) |
                            (uint32_t{prefix[3]} << 8) | uint32_t{prefix[4]};
    if (length > max_message_bytes_) {
      error_ = absl::ResourceExhaustedError(absl::StrCat("received message larger than max (",
                                                         length, " vs. ", max_message_bytes_, ")"));
      break;
    }
    if (buffer_.size() - offset - kPrefixBytes < length) break;
    messages_.emplace_back(buffer_, offset + kPrefixBytes, length);
    offset += kPrefixBytes + length;
  }
  buffer_.erase(0, offset);
  if (!error_.ok()) buffer_.clear();
  return error_;
}

std::vector<std::string> MessageReader::TakeMessages() {
  std::vector<std::string> out;
  out.swap(messages_);
  return out;
}

}  // namespace gpunode::h2grpc
