// gRPC's length-prefixed messages on an HTTP/2 stream: a flag byte (1 = compressed), a 4-byte
// big-endian length, then the serialized message. A request or response body is zero or more of
// them, split across DATA frames wherever the peer's flow control cut it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace gpunode::h2grpc {

// gRPC's default limit for a received message; the kubelet's requests are a few kB at most.
inline constexpr size_t kMaxMessageBytes = 4 * 1024 * 1024;

// Appends `message` to `out` with its 5-byte prefix.
void AppendFramedMessage(std::string_view message, std::string& out);

// Reassembles messages from a stream body as it arrives in arbitrary pieces.
class MessageReader {
 public:
  explicit MessageReader(size_t max_message_bytes = kMaxMessageBytes)
      : max_message_bytes_(max_message_bytes) {}

  // Takes the next piece of the body. After an error every later call returns it again.
  // Compressed messages are refused: gpunode never advertises grpc-accept-encoding, so a peer
  // that compresses anyway is not speaking gRPC to us.
  absl::Status Append(std::string_view bytes);

  // Messages completed so far, oldest first; taking them leaves the reader empty.
  std::vector<std::string> TakeMessages();

  // True when the body ended between messages (no partial prefix or payload left).
  bool AtMessageBoundary() const { return buffer_.empty(); }

 private:
  size_t max_message_bytes_;
  std::string buffer_;
  std::vector<std::string> messages_;
  absl::Status error_;
};

}  // namespace gpunode::h2grpc
