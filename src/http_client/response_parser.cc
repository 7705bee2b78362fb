#include "http_client/response_parser.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "core/printable.h"
#include "core/text.h"

namespace gpunode::http_client {

using core::Printable;
using core::StrCat;

namespace {

// A chunk size line or a trailer is short; a longer one is not an API server's.
constexpr size_t kMaxLine = 4096;
// 15 hex digits: a size that cannot overflow when added to anything the parser counts.
constexpr size_t kMaxSizeDigits = 15;

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string_view WithoutCr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

absl::Status ResponseParser::Fail(std::string message) {
  state_ = State::kFailed;
  keep_alive_ = false;
  error_ = absl::DataLossError(message);
  return error_;
}

absl::Status ResponseParser::Feed(std::string_view bytes, const BodyFn& on_body) {
  while (!bytes.empty()) {
    switch (state_) {
      case State::kHead: {
        // The blank line may straddle the previous piece: search from a few bytes back.
        size_t from = head_.size() < 3 ? 0 : head_.size() - 3;
        size_t before = head_.size();
        head_.append(bytes.substr(0, kMaxHead + 1 - std::min(kMaxHead + 1, head_.size())));
        size_t end = std::string::npos;
        for (size_t i = head_.find('\n', from); i != std::string::npos;
             i = head_.find('\n', i + 1)) {
          if (i + 1 < head_.size() && head_[i + 1] == '\n') {
            end = i + 2;
            break;
          }
          if (i + 2 < head_.size() && head_[i + 1] == '\r' && head_[i + 2] == '\n') {
            end = i + 3;
            break;
          }
        }
        if (end == std::string::npos) {
          if (head_.size() > kMaxHead) {
            return Fail(StrCat("the response head is longer than ", kMaxHead, " bytes"));
          }
          bytes = {};
          break;
        }
        bytes.remove_prefix(end - before);
        head_.resize(end);
        if (absl::Status st = ParseHead(); !st.ok()) return st;
        head_.clear();
        if (status_ >= 100 && status_ < 200) {
          if (status_ == 101) return Fail("the server switched protocols (101) unasked");
          status_ = 0;  // an interim answer: the real one follows
          chunked_ = has_length_ = false;
          retry_after_.clear();
          keep_alive_ = true;
          break;
        }
        StartBody();
        break;
      }
      case State::kLength:
      case State::kChunkData: {
        size_t n = static_cast<size_t>(std::min<uint64_t>(length_, bytes.size()));
        length_ -= n;
        std::string_view piece = bytes.substr(0, n);
        bytes.remove_prefix(n);
        if (length_ == 0) state_ = state_ == State::kLength ? State::kDone : State::kChunkEnd;
        if (!Deliver(piece, on_body)) return absl::OkStatus();
        break;
      }
      case State::kToClose:
        if (!Deliver(bytes, on_body)) return absl::OkStatus();
        bytes = {};
        break;
      case State::kChunkSize:
      case State::kChunkEnd:
      case State::kTrailers: {
        size_t newline = bytes.find('\n');
        if (newline == std::string_view::npos) {
          if (head_.size() + bytes.size() > kMaxLine) {
            return Fail(StrCat("a chunk size or trailer line is longer than ", kMaxLine, " bytes"));
          }
          head_.append(bytes);
          bytes = {};
          break;
        }
        std::string line;
        line.swap(head_);
        line.append(bytes.substr(0, newline));
        bytes.remove_prefix(newline + 1);
        if (line.size() > kMaxLine) {
          return Fail(StrCat("a chunk size or trailer line is longer than ", kMaxLine, " bytes"));
        }
        if (absl::Status st = ChunkLine(WithoutCr(line)); !st.ok()) return st;
        break;
      }
      case State::kDone:
        // Nothing was asked for: the connection no longer says where a response starts.
        keep_alive_ = false;
        bytes = {};
        break;
      case State::kStopped:
        return absl::OkStatus();
      case State::kFailed:
        return error_;
    }
  }
  return state_ == State::kFailed ? error_ : absl::OkStatus();
}

bool ResponseParser::Deliver(std::string_view data, const BodyFn& on_body) {
  if (data.empty() || !on_body || on_body(data)) return true;
  state_ = State::kStopped;
  keep_alive_ = false;
  return false;
}

absl::Status ResponseParser::Finish() {
  switch (state_) {
    case State::kToClose:
      state_ = State::kDone;
      return absl::OkStatus();
    case State::kDone:
    case State::kStopped:
      keep_alive_ = false;
      return absl::OkStatus();
    case State::kFailed:
      return error_;
    case State::kHead:
      return Fail(head_.empty() ? "the connection closed before a response"
                                : "the connection closed in the middle of the response head");
    case State::kLength:
      return Fail(StrCat("the connection closed with ", length_, " bytes of the body missing"));
    default:
      return Fail("the connection closed in the middle of a chunked body");
  }
}

absl::Status ResponseParser::ParseHead() {
  std::string_view rest = head_;
  bool first = true;
  while (!rest.empty()) {
    size_t newline = rest.find('\n');
    std::string_view line = WithoutCr(rest.substr(0, newline));
    rest.remove_prefix(newline + 1);
    if (line.empty()) break;  // the blank line that ends the head
    absl::Status st = first ? ParseStatusLine(line) : ParseHeader(line);
    if (!st.ok()) return st;
    first = false;
  }
  return absl::OkStatus();
}

absl::Status ResponseParser::ParseStatusLine(std::string_view line) {
  auto digit = [&](size_t i) { return i < line.size() && line[i] >= '0' && line[i] <= '9'; };
  // HTTP/1.x SP 3DIGIT [SP reason]
  if (!absl::StartsWith(absl::string_view(line.data(), line.size()), "HTTP/1.") || !digit(7) ||
      line.size() < 12 || line[8] != ' ' || !digit(9) || !digit(10) || !digit(11) ||
      (line.size() > 12 && line[12] != ' ') || line[9] < '1' || line[9] > '5') {
    return Fail(StrCat("not an HTTP/1.1 status line: \"",
                       Printable(line.substr(0, std::min<size_t>(line.size(), 80))), "\""));
  }
  http10_ = line[7] == '0';
  status_ = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  return absl::OkStatus();
}

absl::Status ResponseParser::ParseHeader(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t') {
    return Fail("a folded header line (obsolete line folding is not accepted)");
  }
  size_t colon = line.find(':');
  std::string_view name = line.substr(0, colon);
  if (colon == std::string_view::npos || name.empty() ||
      !std::all_of(name.begin(), name.end(), IsTokenChar)) {
    return Fail(StrCat("not a header line: \"",
                       Printable(line.substr(0, std::min<size_t>(line.size(), 80))), "\""));
  }
  std::string_view value = TrimOws(line.substr(colon + 1));
  absl::string_view lname(name.data(), name.size());
  absl::string_view lvalue(value.data(), value.size());
  if (absl::EqualsIgnoreCase(lname, "content-length")) {
    if (value.empty() || value.size() > 18 ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return Fail(
          StrCat("Content-Length \"", Printable(value.substr(0, 40)), "\" is not a byte count"));
    }
    uint64_t length = 0;
    for (char c : value) length = length * 10 + static_cast<uint64_t>(c - '0');
    if (has_length_ && length != length_) return Fail("two Content-Length headers disagree");
    has_length_ = true;
    length_ = length;
  } else if (absl::EqualsIgnoreCase(lname, "transfer-encoding")) {
    if (chunked_ || !absl::EqualsIgnoreCase(lvalue, "chunked")) {
      return Fail(StrCat("transfer coding \"", Printable(value.substr(0, 40)),
                         "\" was not asked for (only chunked is read)"));
    }
    chunked_ = true;
  } else if (absl::EqualsIgnoreCase(lname, "content-encoding")) {
    if (!absl::EqualsIgnoreCase(lvalue, "identity")) {
      return Fail(
          StrCat("content coding \"", Printable(value.substr(0, 40)), "\" was not asked for"));
    }
  } else if (absl::EqualsIgnoreCase(lname, "connection")) {
    if (absl::AsciiStrToLower(std::string(value)).find("close") != std::string::npos) {
      keep_alive_ = false;
    }
  } else if (absl::EqualsIgnoreCase(lname, "retry-after")) {
    retry_after_ = std::string(value);
  }
  return absl::OkStatus();
}

void ResponseParser::StartBody() {
  if (http10_) keep_alive_ = false;
  if (chunked_ && has_length_) keep_alive_ = false;  // RFC 9112 6.3: chunked wins, then close
  if (head_request_ || status_ == 204 || status_ == 304) {
    state_ = State::kDone;
  } else if (chunked_) {
    state_ = State::kChunkSize;
  } else if (has_length_) {
    state_ = length_ == 0 ? State::kDone : State::kLength;
  } else {
    state_ = State::kToClose;
    keep_alive_ = false;
  }
}

absl::Status ResponseParser::ChunkLine(std::string_view line) {
  if (state_ == State::kChunkEnd) {
    if (!line.empty()) return Fail("a chunk is not followed by its line end");
    state_ = State::kChunkSize;
    return absl::OkStatus();
  }
  if (state_ == State::kTrailers) {
    if (line.empty()) state_ = State::kDone;  // trailer fields carry nothing the client reads
    return absl::OkStatus();
  }
  // chunk-size [ BWS ";" extensions ]
  std::string_view size = TrimOws(line.substr(0, line.find(';')));
  if (size.empty() || size.size() > kMaxSizeDigits ||
      !std::all_of(size.begin(), size.end(),
                   [](char c) { return absl::ascii_isxdigit(static_cast<unsigned char>(c)); })) {
    return Fail(StrCat("not a chunk size line: \"",
                       Printable(line.substr(0, std::min<size_t>(line.size(), 40))), "\""));
  }
  // Only hex digits, and few enough of them to fit: SimpleHexAtoi cannot fail here.
  uint64_t value = 0;
  (void)absl::SimpleHexAtoi(absl::string_view(size.data(), size.size()), &value);
  if (value == 0) {
    state_ = State::kTrailers;
  } else {
    length_ = value;
    state_ = State::kChunkData;
  }
  return absl::OkStatus();
}

}  // namespace gpunode::http_client
