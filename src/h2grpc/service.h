// The methods a gRPC server answers, by path ("/package.Service/Method"), and the call object a
// server-streaming handler writes its responses to.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"

namespace gpunode::h2grpc {

// Responses a client has not taken yet wait in memory: up to this many bytes in the call's queue,
// and as much again in its connection (kMaxUnsentPerCall). A client that stopped reading while
// the handler keeps writing would otherwise grow them without end.
inline constexpr size_t kMaxQueuedPerStream = 4 << 20;
inline constexpr size_t kMaxUnsentPerCall = 1 << 20;

// One server-streaming call as its handler sees it. Thread-safe: the handler writes from its own
// thread while the connection's thread sends.
class ServerStream {
 public:
  explicit ServerStream(std::function<void()> wake) : wake_(std::move(wake)) {}

  // Queues one serialized response; false once the call is over (the client cancelled or went
  // away, or the server is stopping), when the handler should return. Also false, ending the
  // call with RESOURCE_EXHAUSTED whatever the handler then returns, when the queue would pass
  // kMaxQueuedPerStream: the client has stopped reading.
  bool Write(std::string_view message);
  bool Write(const google::protobuf::MessageLite& message);
  // True once the client cancelled or went away, or the server is stopping.
  bool cancelled() const;
  // `on_cancel` runs (on the connection's thread, or here when the call is already over) when the
  // call ends that way, so that a handler can block on its own condition instead of polling
  // cancelled(). It runs without the stream's lock held and must not call back into the stream.
  // Pass nullptr before the handler returns if what it captures dies with the handler; that
  // waits for a run in progress.
  void SetOnCancel(std::function<void()> on_cancel);

 private:
  friend class ServerConnection;

  // The connection's side.
  void Finish(absl::Status status);  // the handler returned
  void Close();                      // the HTTP/2 stream is gone
  void Cancel();                     // the server is stopping: writes end, Finish still goes out
  // Moves up to `max_bytes` of the queued bytes (framed) into `out`; returns the final status
  // once the handler finished and the queue is empty.
  std::optional<absl::Status> Drain(std::string& out, size_t max_bytes);

  void NotifyCancel();

  std::function<void()> wake_;
  std::mutex on_cancel_mutex_;  // held while on_cancel_ runs or changes
  std::function<void()> on_cancel_;
  mutable std::mutex mutex_;
  std::string pending_;
  std::optional<absl::Status> final_;
  bool closed_ = false;
  bool cancelled_ = false;
  bool overflowed_ = false;
};

// A unary handler gets the serialized request and returns the serialized response or an error.
using UnaryHandler = std::function<absl::StatusOr<std::string>(std::string_view request)>;
// A server-streaming handler gets the one request, writes responses until it is done or the
// stream is cancelled, and returns the call's status. It may block: it runs on a thread of its own.
using StreamingHandler = std::function<absl::Status(std::string_view request, ServerStream&)>;

class Service {
 public:
  void AddUnary(std::string path, UnaryHandler handler);
  void AddServerStreaming(std::string path, StreamingHandler handler);

  // Typed forms for protobuf messages; a request that does not parse is INTERNAL, as gRPC's.
  template <class Request, class Response>
  void AddUnary(std::string path, std::function<absl::StatusOr<Response>(const Request&)> handler);
  template <class Request>
  void AddServerStreaming(std::string path,
                          std::function<absl::Status(const Request&, ServerStream&)> handler);

  const UnaryHandler* FindUnary(std::string_view path) const;
  const StreamingHandler* FindStreaming(std::string_view path) const;

 private:
  std::map<std::string, UnaryHandler, std::less<>> unary_;
  std::map<std::string, StreamingHandler, std::less<>> streaming_;
};

absl::Status RequestParseError(std::string_view path);

template <class Request, class Response>
void Service::AddUnary(std::string path,
                       std::function<absl::StatusOr<Response>(const Request&)> handler) {
  std::string name = path;
  AddUnary(
      std::move(path),
      [handler = std::move(handler), name](std::string_view bytes) -> absl::StatusOr<std::string> {
        Request request;
        if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
          return RequestParseError(name);
        }
        absl::StatusOr<Response> response = handler(request);
        if (!response.ok()) return response.status();
        return response->SerializeAsString();
      });
}

template <class Request>
void Service::AddServerStreaming(
    std::string path, std::function<absl::Status(const Request&, ServerStream&)> handler) {
  std::string name = path;
  AddServerStreaming(std::move(path), [handler = std::move(handler), name](std::string_view bytes,
                                                                           ServerStream& stream) {
    Request request;
    if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return RequestParseError(name);
    }
    return handler(request, stream);
  });
}

}  // namespace gpunode::h2grpc
