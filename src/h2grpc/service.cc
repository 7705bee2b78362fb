#include "h2grpc/service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "h2grpc/message_framing.h"

namespace gpunode::h2grpc {

bool ServerStream::Write(std::string_view message) {
  {
    std::lock_guard lock(mutex_);
    if (closed_ || cancelled_ || final_) return false;
    // One message larger than the bound still goes out alone.
    if (!pending_.empty() && pending_.size() + message.size() > kMaxQueuedPerStream) {
      overflowed_ = true;
      cancelled_ = true;
      return false;
    }
    AppendFramedMessage(message, pending_);
  }
  wake_();
  return true;
}

bool ServerStream::Write(const google::protobuf::MessageLite& message) {
  return Write(message.SerializeAsString());
}

bool ServerStream::cancelled() const {
  std::lock_guard lock(mutex_);
  return closed_ || cancelled_;
}

void ServerStream::Finish(absl::Status status) {
  {
    std::lock_guard lock(mutex_);
    if (closed_ || final_) return;
    final_ = overflowed_ ? absl::ResourceExhaustedError(absl::StrCat(
                               "the client stopped reading: more than ", kMaxQueuedPerStream,
                               " bytes of responses were waiting for it"))
                         : std::move(status);
  }
  wake_();
}

void ServerStream::SetOnCancel(std::function<void()> on_cancel) {
  std::lock_guard callback(on_cancel_mutex_);
  on_cancel_ = std::move(on_cancel);
  if (on_cancel_ && cancelled()) on_cancel_();
}

void ServerStream::NotifyCancel() {
  std::lock_guard callback(on_cancel_mutex_);
  if (on_cancel_) on_cancel_();
}

void ServerStream::Close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    pending_.clear();
  }
  NotifyCancel();
}

void ServerStream::Cancel() {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  NotifyCancel();
}

std::optional<absl::Status> ServerStream::Drain(std::string& out, size_t max_bytes) {
  std::lock_guard lock(mutex_);
  size_t n = std::min(max_bytes, pending_.size());
  out.append(pending_, 0, n);
  pending_.erase(0, n);
  return pending_.empty() ? final_ : std::nullopt;
}

void Service::AddUnary(std::string path, UnaryHandler handler) {
  unary_[std::move(path)] = std::move(handler);
}

void Service::AddServerStreaming(std::string path, StreamingHandler handler) {
  streaming_[std::move(path)] = std::move(handler);
}

const UnaryHandler* Service::FindUnary(std::string_view path) const {
  auto it = unary_.find(path);
  return it == unary_.end() ? nullptr : &it->second;
}

const StreamingHandler* Service::FindStreaming(std::string_view path) const {
  auto it = streaming_.find(path);
  return it == streaming_.end() ? nullptr : &it->second;
}

absl::Status RequestParseError(std::string_view path) {
  return absl::InternalError(
      absl::StrCat("cannot parse the request message of ", std::string(path)));
}

}  // namespace gpunode::h2grpc
