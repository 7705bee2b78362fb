// An incremental parser of one HTTP/1.1 response (RFC 9112) as the API server sends it: status
// line, headers, then a body framed by Content-Length, by Transfer-Encoding: chunked, or by the
// end of the connection. Bytes may arrive split anywhere; body bytes are handed on as soon as
// they are framed, so a watch's events reach the caller while the response is still open.
//
// Pure: no I/O, no clock, no allocation beyond the head (capped at kMaxHead bytes) and one chunk
// size line. Refused, with an error naming what was wrong: a status line that is not
// `HTTP/1.x NNN`, a header line without a name and colon, folded header lines, a Content-Length
// that is not a number or disagrees with another, a transfer coding other than chunked, a
// Content-Encoding (the request never offers one), 101 Switching Protocols, a bad chunk size
// line or chunk terminator. Interim 1xx answers are skipped.
//
// Thread-safety: none; one parser per response.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace gpunode::http_client {

class ResponseParser {
 public:
  static constexpr size_t kMaxHead = 64 * 1024;

  // Body bytes; returning false stops the parse (stopped() is then true).
  using BodyFn = std::function<bool(std::string_view)>;

  // `head_request`: the answer to a HEAD, which has headers only.
  explicit ResponseParser(bool head_request = false) : head_request_(head_request) {}

  // Consumes `bytes`. Once the status and headers are parsed, `on_body` gets the body as it is
  // framed. Bytes after the end of the response (which a server must not send unasked) make the
  // connection unusable for another request. After an error, every later Feed returns it again.
  absl::Status Feed(std::string_view bytes, const BodyFn& on_body);
  // The peer closed the connection: ends a body that runs to the close; an error if the response
  // is incomplete.
  absl::Status Finish();

  bool head_done() const { return state_ != State::kHead; }
  bool done() const { return state_ == State::kDone; }
  bool stopped() const { return state_ == State::kStopped; }
  int status() const { return status_; }
  const std::string& retry_after() const { return retry_after_; }
  // Whether the connection may carry another request once this response is done.
  bool keep_alive() const { return keep_alive_ && done(); }

 private:
  enum class State {
    kHead,
    kLength,
    kChunkSize,
    kChunkData,
    kChunkEnd,
    kTrailers,
    kToClose,
    kDone,
    kStopped,
    kFailed
  };

  absl::Status Fail(std::string message);
  // Parses the complete head in head_ (through its blank line).
  absl::Status ParseHead();
  absl::Status ParseStatusLine(std::string_view line);
  absl::Status ParseHeader(std::string_view line);
  // Moves from the head to the body state its headers call for.
  void StartBody();
  // One complete line of the chunked framing (without its line end).
  absl::Status ChunkLine(std::string_view line);
  bool Deliver(std::string_view data, const BodyFn& on_body);

  const bool head_request_;
  State state_ = State::kHead;
  absl::Status error_;
  std::string head_;  // the head so far; later a partial chunk size or trailer line
  int status_ = 0;
  bool http10_ = false;
  bool chunked_ = false;
  bool has_length_ = false;
  uint64_t length_ = 0;  // Content-Length, then what is left of the body or of the chunk
  bool keep_alive_ = true;
  std::string retry_after_;
};

}  // namespace gpunode::http_client
