#include "h2grpc/server_connection.h"

#include <nghttp2/nghttp2.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "h2grpc/grpc_status.h"
#include "h2grpc/nghttp2_header.h"

namespace gpunode::h2grpc {
namespace {

// The kubelet opens a handful of calls per connection; this bounds a misbehaving client.
constexpr uint32_t kMaxConcurrentStreams = 100;

bool IsGrpcContentType(std::string_view type) {
  // "application/grpc", optionally followed by "+proto" or ";params".
  constexpr std::string_view kGrpc = "application/grpc";
  return type.substr(0, kGrpc.size()) == kGrpc &&
         (type.size() == kGrpc.size() || type[kGrpc.size()] == '+' || type[kGrpc.size()] == ';');
}

}  // namespace

struct ServerConnection::Call {
  int32_t id = 0;
  std::string method;
  std::string path;
  std::string content_type;
  MessageReader reader;
  std::vector<std::string> requests;
  absl::Status request_error;
  bool dispatched = false;
  // Response side.
  bool response_started = false;
  bool deferred = false;
  bool trailers_sent = false;
  std::string body;
  size_t body_offset = 0;
  std::optional<absl::Status> final;
  std::string grpc_status;  // backing storage for the trailer headers
  std::string grpc_message;
  std::shared_ptr<ServerStream> stream;
};

struct ServerConnection::Callbacks {
  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* self_ptr) {
    auto* self = static_cast<ServerConnection*>(self_ptr);
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    auto call = std::make_unique<Call>();
    call->id = frame->hd.stream_id;
    self->calls_[call->id] = std::move(call);
    return 0;
  }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t name_len, const uint8_t* value, size_t value_len, uint8_t,
                      void* self_ptr) {
    auto* self = static_cast<ServerConnection*>(self_ptr);
    auto it = self->calls_.find(frame->hd.stream_id);
    if (it == self->calls_.end() || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    std::string_view key(reinterpret_cast<const char*>(name), name_len);
    std::string_view text(reinterpret_cast<const char*>(value), value_len);
    Call& call = *it->second;
    if (key == ":method") {
      call.method = text;
    } else if (key == ":path") {
      call.path = text;
    } else if (key == "content-type") {
      call.content_type = text;
    }
    return 0;
  }

  static int OnDataChunk(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data,
                         size_t len, void* self_ptr) {
    auto* self = static_cast<ServerConnection*>(self_ptr);
    auto it = self->calls_.find(stream_id);
    if (it == self->calls_.end()) return 0;
    Call& call = *it->second;
    if (call.dispatched || !call.request_error.ok()) return 0;
    absl::Status st =
        call.reader.Append(std::string_view(reinterpret_cast<const char*>(data), len));
    for (std::string& message : call.reader.TakeMessages())
      call.requests.push_back(std::move(message));
    if (!st.ok()) {
      call.request_error = st;
    } else if (call.requests.size() > 1) {
      // Every method served here takes exactly one request message.
      call.request_error = absl::InternalError(
          absl::StrCat(call.path, " takes one request message; the client sent more"));
    }
    if (!call.request_error.ok()) self->Dispatch(call);
    return 0;
  }

  static int OnFrameReceived(nghttp2_session*, const nghttp2_frame* frame, void* self_ptr) {
    auto* self = static_cast<ServerConnection*>(self_ptr);
    if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
        !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
      return 0;
    }
    auto it = self->calls_.find(frame->hd.stream_id);
    if (it != self->calls_.end() && !it->second->dispatched) self->Dispatch(*it->second);
    return 0;
  }

  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t, void* self_ptr) {
    auto* self = static_cast<ServerConnection*>(self_ptr);
    auto it = self->calls_.find(stream_id);
    if (it == self->calls_.end()) return 0;
    if (it->second->stream) it->second->stream->Close();
    self->calls_.erase(it);
    return 0;
  }

  static ssize_t ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length,
                          uint32_t* data_flags, nghttp2_data_source* source, void* self_ptr) {
    auto* self = static_cast<ServerConnection*>(self_ptr);
    Call& call = *static_cast<Call*>(source->ptr);
    size_t n = std::min(length, call.body.size() - call.body_offset);
    std::memcpy(buf, call.body.data() + call.body_offset, n);
    call.body_offset += n;
    if (call.body_offset == call.body.size()) {
      call.body.clear();
      call.body_offset = 0;
      if (call.final) {
        // The stream ends with the trailers, not with this DATA frame.
        *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        self->SubmitTrailers(call);
        return static_cast<ssize_t>(n);
      }
      if (n == 0) {
        call.deferred = true;
        return NGHTTP2_ERR_DEFERRED;
      }
    }
    return static_cast<ssize_t>(n);
  }
};

ServerConnection::ServerConnection(const Service& service, StreamRunner runner,
                                   std::function<void()> wake)
    : service_(service), runner_(std::move(runner)), wake_(std::move(wake)) {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, &Callbacks::OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &Callbacks::OnHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &Callbacks::OnDataChunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &Callbacks::OnFrameReceived);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &Callbacks::OnStreamClose);
  nghttp2_option* options = nullptr;
  nghttp2_option_new(&options);
  // nghttp2's HTTP checks refuse an :authority with '/' in it, which is what Go's gRPC sends when
  // it dials a unix socket path, as the kubelet does: gRPC does not look at :authority, and the
  // checks a gRPC call needs (method, content type, path) are made in Dispatch.
  nghttp2_option_set_no_http_messaging(options, 1);
  nghttp2_session_server_new2(&session_, callbacks, this, options);
  nghttp2_option_del(options);
  nghttp2_session_callbacks_del(callbacks);
  nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, kMaxConcurrentStreams}};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
}

ServerConnection::~ServerConnection() {
  for (auto& [id, call] : calls_) {
    if (call->stream) call->stream->Close();
  }
  nghttp2_session_del(session_);
}

absl::Status ServerConnection::Receive(std::string_view bytes) {
  if (failed_) return absl::UnavailableError("connection already failed");
  ssize_t read = nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(bytes.data()),
                                          bytes.size());
  if (read < 0) {
    failed_ = true;
    return absl::InvalidArgumentError(
        absl::StrCat("HTTP/2 error from the client: ", nghttp2_strerror(static_cast<int>(read))));
  }
  Pump();
  return absl::OkStatus();
}

void ServerConnection::Pump() {
  for (auto& [id, call] : calls_) {
    if (!call->stream || call->trailers_sent) continue;
    // Past the bound the responses stay in the stream's queue, where Write sees them pile up.
    std::optional<absl::Status> final;
    if (size_t unsent = call->body.size() - call->body_offset; unsent < kMaxUnsentPerCall) {
      final = call->stream->Drain(call->body, kMaxUnsentPerCall - unsent);
    }
    if (final && !call->final) call->final = std::move(final);
    if (call->body_offset == call->body.size() && !call->final) continue;
    if (!call->response_started) {
      if (call->body.empty() && call->final && !call->final->ok()) {
        RespondTrailersOnly(*call, *call->final);
      } else {
        StartResponse(*call);
      }
    } else if (call->deferred) {
      call->deferred = false;
      nghttp2_session_resume_data(session_, call->id);
    }
  }
}

void ServerConnection::TakeOutput(std::string& out) {
  for (;;) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n <= 0) break;
    out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
}

bool ServerConnection::Finished() const {
  return failed_ ? !nghttp2_session_want_write(session_)
                 : !nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_);
}

void ServerConnection::Shutdown() {
  for (auto& [id, call] : calls_) {
    if (call->stream) call->stream->Cancel();
  }
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
  Pump();
}

void ServerConnection::Dispatch(Call& call) {
  call.dispatched = true;
  if (call.method != "POST") return RespondHttpError(call, 405);
  if (!IsGrpcContentType(call.content_type)) return RespondHttpError(call, 415);
  const UnaryHandler* unary = service_.FindUnary(call.path);
  const StreamingHandler* streaming = unary ? nullptr : service_.FindStreaming(call.path);
  if (!unary && !streaming) {
    return RespondTrailersOnly(
        call, absl::UnimplementedError(absl::StrCat("unknown method ", call.path)));
  }
  if (!call.request_error.ok()) return RespondTrailersOnly(call, call.request_error);
  if (call.requests.size() != 1 || !call.reader.AtMessageBoundary()) {
    return RespondTrailersOnly(
        call, absl::InternalError(
                  absl::StrCat(call.path, " takes one request message; got ", call.requests.size(),
                               call.reader.AtMessageBoundary() ? "" : " and a part")));
  }
  if (unary) {
    absl::StatusOr<std::string> response = (*unary)(call.requests.front());
    if (!response.ok()) return RespondTrailersOnly(call, response.status());
    std::string body;
    AppendFramedMessage(*response, body);
    return Respond(call, std::move(body), absl::OkStatus());
  }
  call.stream = std::make_shared<ServerStream>(wake_);
  // The handler owns copies of what it needs: the call may close before it returns.
  runner_([handler = *streaming, request = std::move(call.requests.front()), stream = call.stream] {
    stream->Finish(handler(request, *stream));
  });
  call.requests.clear();
}

void ServerConnection::Respond(Call& call, std::string body, absl::Status status) {
  call.body = std::move(body);
  call.final = std::move(status);
  StartResponse(call);
}

void ServerConnection::StartResponse(Call& call) {
  call.response_started = true;
  nghttp2_nv headers[] = {Header(":status", "200"), Header("content-type", "application/grpc")};
  nghttp2_data_provider provider{};
  provider.source.ptr = &call;
  provider.read_callback = &Callbacks::ReadBody;
  nghttp2_submit_response(session_, call.id, headers, 2, &provider);
}

void ServerConnection::RespondTrailersOnly(Call& call, const absl::Status& status) {
  call.response_started = true;
  call.trailers_sent = true;
  call.grpc_status = std::to_string(static_cast<int>(status.code()));
  call.grpc_message = PercentEncode(std::string(status.message()));
  nghttp2_nv headers[] = {Header(":status", "200"), Header("content-type", "application/grpc"),
                          Header("grpc-status", call.grpc_status),
                          Header("grpc-message", call.grpc_message)};
  nghttp2_submit_response(session_, call.id, headers, call.grpc_message.empty() ? 3 : 4, nullptr);
}

void ServerConnection::RespondHttpError(Call& call, int http_status) {
  call.response_started = true;
  call.trailers_sent = true;
  call.grpc_status = std::to_string(http_status);
  nghttp2_nv headers[] = {Header(":status", call.grpc_status)};
  nghttp2_submit_response(session_, call.id, headers, 1, nullptr);
}

void ServerConnection::SubmitTrailers(Call& call) {
  call.trailers_sent = true;
  call.grpc_status = std::to_string(static_cast<int>(call.final->code()));
  call.grpc_message = PercentEncode(std::string(call.final->message()));
  nghttp2_nv trailers[] = {Header("grpc-status", call.grpc_status),
                           Header("grpc-message", call.grpc_message)};
  nghttp2_submit_trailer(session_, call.id, trailers, call.grpc_message.empty() ? 1 : 2);
}

}  // namespace gpunode::h2grpc
