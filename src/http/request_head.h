// The head of an HTTP/1.x request (RFC 9112): the request line and the header fields the plain
// server acts on, read from the bytes a client sent. Outside input: anything that is not a
// well-formed head is an error with the status to answer, never a guess.
//
// Contract:
// - `ParseRequestHead` looks only at `bytes[0, end of head)`; what follows (a body, a pipelined
//   request) is the caller's. It reports kIncomplete while no blank line ends the head within
//   `max_head_bytes`, and kTooLarge (431) once that many bytes hold none.
// - Fields other than Content-Length, Transfer-Encoding, Connection and Expect are checked for form
//   and otherwise ignored. Obsolete line folding, a field name with white space before its colon,
//   a second differing Content-Length and both Content-Length and Transfer-Encoding are refused
//   (400): each is a way to make two parsers read one message differently (request smuggling).
// - The views in a parsed head point into `bytes`, but for the path of an absolute target that has
//   none ("http://host:9400"), which is "/".
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace gpunode::http {

struct RequestHead {
  std::string_view method;
  std::string_view path;  // the target up to '?' or '#'; the query is not used by any route
  int minor_version = 1;  // HTTP/1.<minor>
  std::optional<size_t> content_length;
  bool chunked = false;  // Transfer-Encoding given (the plain server answers 501 to it)
  bool connection_close = false;
  bool connection_keep_alive = false;
  bool expect_continue = false;
  size_t head_bytes = 0;  // the request line and fields, with the blank line that ends them
};

enum class HeadOutcome { kParsed, kIncomplete, kBad, kTooLarge };

struct HeadResult {
  HeadOutcome outcome = HeadOutcome::kIncomplete;
  RequestHead head;          // when kParsed
  std::string_view problem;  // when kBad: what was wrong, for the 400's body
};

HeadResult ParseRequestHead(std::string_view bytes, size_t max_head_bytes);

}  // namespace gpunode::http
