#include "h2grpc/client.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/unique_fd.h"
#include "core/unix_socket.h"
#include "h2grpc/grpc_status.h"
#include "h2grpc/message_framing.h"
#include "h2grpc/nghttp2_header.h"

namespace gpunode::h2grpc {
namespace {

using Clock = std::chrono::steady_clock;

// The state of the one call, filled in by nghttp2's callbacks.
struct Call {
  explicit Call(size_t max_response_bytes) : reader(max_response_bytes) {}
  int32_t stream_id = -1;
  std::string request;  // framed
  size_t request_offset = 0;
  int http_status = 0;
  std::optional<std::string> grpc_status;
  std::string grpc_message;
  MessageReader reader;
  absl::Status body_error;
  bool closed = false;
  uint32_t reset_code = 0;
};

ssize_t ReadRequest(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* data_flags,
                    nghttp2_data_source* source, void*) {
  Call& call = *static_cast<Call*>(source->ptr);
  size_t n = std::min(length, call.request.size() - call.request_offset);
  std::memcpy(buf, call.request.data() + call.request_offset, n);
  call.request_offset += n;
  if (call.request_offset == call.request.size()) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t name_len,
             const uint8_t* value, size_t value_len, uint8_t, void* user_data) {
  Call& call = *static_cast<Call*>(user_data);
  if (frame->hd.stream_id != call.stream_id) return 0;
  std::string_view key(reinterpret_cast<const char*>(name), name_len);
  std::string_view text(reinterpret_cast<const char*>(value), value_len);
  if (key == ":status") {
    // An unreadable :status stays 0, which is not 200 and so an error.
    if (!absl::SimpleAtoi(std::string(text), &call.http_status)) call.http_status = 0;
  } else if (key == "grpc-status") {
    call.grpc_status = std::string(text);
  } else if (key == "grpc-message") {
    call.grpc_message = std::string(text);
  }
  return 0;
}

int OnDataChunk(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                void* user_data) {
  Call& call = *static_cast<Call*>(user_data);
  if (stream_id != call.stream_id || !call.body_error.ok()) return 0;
  call.body_error = call.reader.Append(std::string_view(reinterpret_cast<const char*>(data), len));
  return 0;
}

int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user_data) {
  Call& call = *static_cast<Call*>(user_data);
  if (stream_id != call.stream_id) return 0;
  call.closed = true;
  call.reset_code = error_code;
  return 0;
}

// Owns the socket and the session, which goes first.
struct Connection {
  core::UniqueFd fd;
  nghttp2_session* session = nullptr;
  ~Connection() {
    if (session) nghttp2_session_del(session);
  }
};

std::string TimeoutHeader(std::chrono::milliseconds timeout) {
  // grpc-timeout allows at most 8 digits per unit.
  int64_t ms = std::clamp<int64_t>(timeout.count(), 1, 99'999'999);
  return absl::StrCat(ms, "m");
}

absl::Status CallStatus(const Call& call, const std::string& target) {
  if (call.grpc_status) {
    absl::Status st = StatusFromTrailers(*call.grpc_status, call.grpc_message);
    if (!st.ok()) return st;
  } else if (call.reset_code != NGHTTP2_NO_ERROR) {
    return call.reset_code == NGHTTP2_REFUSED_STREAM
               ? absl::UnavailableError(absl::StrCat(target, " refused the call"))
           : call.reset_code == NGHTTP2_CANCEL
               ? absl::CancelledError(absl::StrCat(target, " cancelled the call"))
               : absl::InternalError(absl::StrCat(
                     target, " reset the call: ", nghttp2_http2_strerror(call.reset_code)));
  } else if (call.http_status != 200) {
    return StatusFromHttp(call.http_status);
  } else {
    return absl::InternalError(absl::StrCat(target, " answered without grpc-status"));
  }
  if (!call.body_error.ok()) return call.body_error;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> CallUnary(const std::string& socket_path, std::string_view method_path,
                                      std::string_view request, std::chrono::milliseconds timeout,
                                      size_t max_response_bytes) {
  const Clock::time_point deadline = Clock::now() + timeout;
  const std::string target = absl::StrCat(socket_path, " (", std::string(method_path), ")");
  absl::StatusOr<sockaddr_un> address = core::UnixAddress(socket_path);
  if (!address.ok()) return address.status();
  Connection connection;
  connection.fd.Reset(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const auto* peer = reinterpret_cast<const sockaddr*>(&*address);
  if (!connection.fd.valid() || connect(connection.fd.get(), peer, sizeof *address) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot connect to ", socket_path, ": ", std::strerror(errno)));
  }

  Call call(max_response_bytes);
  AppendFramedMessage(request, call.request);
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &OnHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &OnStreamClose);
  nghttp2_session_client_new(&connection.session, callbacks, &call);
  nghttp2_session_callbacks_del(callbacks);

  nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
  nghttp2_submit_settings(connection.session, NGHTTP2_FLAG_NONE, settings, 1);
  const std::string path(method_path);
  const std::string grpc_timeout = TimeoutHeader(timeout);
  nghttp2_nv headers[] = {Header(":method", "POST"),
                          Header(":scheme", "http"),
                          Header(":path", path),
                          Header(":authority", "localhost"),
                          Header("content-type", "application/grpc"),
                          Header("te", "trailers"),
                          Header("grpc-timeout", grpc_timeout),
                          Header("user-agent", "gpunode")};
  nghttp2_data_provider provider{};
  provider.source.ptr = &call;
  provider.read_callback = &ReadRequest;
  call.stream_id = nghttp2_submit_request(connection.session, nullptr, headers,
                                          sizeof headers / sizeof headers[0], &provider, nullptr);
  if (call.stream_id < 0) {
    return absl::InternalError(
        absl::StrCat("cannot start the call: ", nghttp2_strerror(call.stream_id)));
  }

  std::string output;
  char buffer[16384];
  while (!call.closed) {
    for (;;) {
      const uint8_t* data = nullptr;
      ssize_t n = nghttp2_session_mem_send(connection.session, &data);
      if (n <= 0) break;
      output.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return absl::DeadlineExceededError(
          absl::StrCat(target, " did not answer within ", timeout.count(), " ms"));
    }
    pollfd fd{connection.fd.get(), static_cast<short>(POLLIN | (output.empty() ? 0 : POLLOUT)), 0};
    if (poll(&fd, 1, static_cast<int>(left.count()) + 1) < 0 && errno != EINTR) {
      return absl::UnavailableError(absl::StrCat("poll: ", std::strerror(errno)));
    }
    if (fd.revents & POLLOUT) {
      ssize_t n =
          send(connection.fd.get(), output.data(), output.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return absl::UnavailableError(
            absl::StrCat("connection to ", target, " broke: ", std::strerror(errno)));
      }
      if (n > 0) output.erase(0, static_cast<size_t>(n));
    }
    if (fd.revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = recv(connection.fd.get(), buffer, sizeof buffer, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        return absl::UnavailableError(absl::StrCat(target, " closed the connection"));
      }
      if (n > 0 &&
          nghttp2_session_mem_recv(connection.session, reinterpret_cast<const uint8_t*>(buffer),
                                   static_cast<size_t>(n)) < 0) {
        return absl::UnavailableError(absl::StrCat(target, " broke the HTTP/2 protocol"));
      }
    }
  }
  absl::Status status = CallStatus(call, target);
  if (!status.ok()) return status;
  std::vector<std::string> messages = call.reader.TakeMessages();
  if (messages.size() != 1 || !call.reader.AtMessageBoundary()) {
    return absl::InternalError(
        absl::StrCat(target, " answered a unary call with ", messages.size(), " messages"));
  }
  return std::move(messages.front());
}

absl::Status CallUnary(const std::string& socket_path, std::string_view method_path,
                       const google::protobuf::MessageLite& request,
                       google::protobuf::MessageLite& response, std::chrono::milliseconds timeout,
                       size_t max_response_bytes) {
  absl::StatusOr<std::string> bytes =
      CallUnary(socket_path, method_path, request.SerializeAsString(), timeout, max_response_bytes);
  if (!bytes.ok()) return bytes.status();
  if (!response.ParseFromString(*bytes)) {
    return absl::InternalError(absl::StrCat("cannot parse the response of ",
                                            std::string(method_path), " from ", socket_path));
  }
  return absl::OkStatus();
}

}  // namespace gpunode::h2grpc
