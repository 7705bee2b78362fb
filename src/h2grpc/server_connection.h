// One client's HTTP/2 connection to a gRPC server, without the socket: bytes in, bytes out. The
// server's loop moves the bytes; tests and the fuzzer drive it directly.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "h2grpc/message_framing.h"
#include "h2grpc/service.h"

struct nghttp2_session;

namespace gpunode::h2grpc {

class ServerConnection {
 public:
  // Runs a server-streaming call: the server gives each its own thread; `run` must call `call`.
  using StreamRunner = std::function<void(std::function<void()> call)>;

  // `wake` is what a handler's ServerStream calls after queueing output, so that the owner calls
  // Pump() on this connection's thread.
  ServerConnection(const Service& service, StreamRunner runner, std::function<void()> wake);
  ~ServerConnection();
  ServerConnection(const ServerConnection&) = delete;
  ServerConnection& operator=(const ServerConnection&) = delete;

  // Feeds bytes read from the client. An error means the connection is unusable: send what
  // TakeOutput() has (a GOAWAY, usually), then close.
  absl::Status Receive(std::string_view bytes);
  // Moves what streaming handlers queued into the HTTP/2 session.
  void Pump();
  // Appends the bytes to send to the client.
  void TakeOutput(std::string& out);
  // True when both sides are done (GOAWAY exchanged or a fatal error) and nothing is left to send.
  bool Finished() const;
  // Stops the streams (their writes fail; handlers' final statuses still go out on Pump) and
  // tells the client that no new calls are taken.
  void Shutdown();

 private:
  struct Call;

  // nghttp2's callbacks, which reach the members below through their user-data pointer.
  struct Callbacks;
  friend struct Callbacks;

  void Dispatch(Call& call);
  // Answers with headers, then `body` (framed messages), then trailers with `status`.
  void Respond(Call& call, std::string body, absl::Status status);
  // An error before any message: one HEADERS frame carrying the status ("Trailers-Only").
  void RespondTrailersOnly(Call& call, const absl::Status& status);
  void RespondHttpError(Call& call, int http_status);
  void StartResponse(Call& call);
  void SubmitTrailers(Call& call);

  const Service& service_;
  StreamRunner runner_;
  std::function<void()> wake_;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, std::unique_ptr<Call>> calls_;
  bool failed_ = false;
};

}  // namespace gpunode::h2grpc
