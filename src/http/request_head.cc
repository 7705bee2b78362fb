#include "http/request_head.h"

#include <charconv>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"

namespace gpunode::http {
namespace {

// More fields than any client of ours sends; a head with more is answered 431.
constexpr size_t kMaxFields = 100;

// (Debian's abseil has a string_view of its own, which its string functions take.)
bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (absl::ascii_tolower(static_cast<unsigned char>(a[i])) !=
        absl::ascii_tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Without the spaces and tabs around it (a field's optional white space).
std::string_view TrimWhitespace(std::string_view text) {
  size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

bool IsTokenChar(unsigned char c) {
  return absl::ascii_isalnum(c) ||
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool IsToken(std::string_view text) {
  if (text.empty()) return false;
  for (unsigned char c : text) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

// Visible ASCII, space and tab, and bytes of 0x80 and over (obs-text): no other control.
bool IsFieldValue(std::string_view text) {
  for (unsigned char c : text) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

bool IsTargetText(std::string_view text) {
  if (text.empty()) return false;
  for (unsigned char c : text) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

// The path of an origin-form target ("/metrics?x") or of an absolute-form one
// ("http://host:9400/metrics"), which a server must accept too; nothing for any other form.
std::optional<std::string_view> TargetPath(std::string_view target) {
  if (!target.starts_with('/')) {
    size_t scheme_end = target.find("://");
    if (scheme_end == std::string_view::npos) return std::nullopt;
    std::string_view scheme = target.substr(0, scheme_end);
    if (!EqualsIgnoreCase(scheme, "http") && !EqualsIgnoreCase(scheme, "https")) {
      return std::nullopt;
    }
    size_t path_start = target.find('/', scheme_end + 3);
    if (path_start == std::string_view::npos) return std::string_view("/");
    target.remove_prefix(path_start);
  }
  return target.substr(0, target.find_first_of("?#"));
}

HeadResult Bad(std::string_view problem) {
  HeadResult result;
  result.outcome = HeadOutcome::kBad;
  result.problem = problem;
  return result;
}

}  // namespace

HeadResult ParseRequestHead(std::string_view bytes, size_t max_head_bytes) {
  // A server should ignore empty lines before the request line (RFC 9112, 2.2).
  size_t start = 0;
  while (start < bytes.size() && (bytes[start] == '\r' || bytes[start] == '\n')) ++start;
  // Lines end at LF, with or without the CR before it (RFC 9112, 2.2).
  size_t end = bytes.find("\n\r\n", start);
  size_t bare_end = bytes.find("\n\n", start);
  size_t head_end = std::string_view::npos;
  if (end != std::string_view::npos) head_end = end + 3;
  if (bare_end != std::string_view::npos &&
      (bare_end + 2 < head_end || end == std::string_view::npos)) {
    head_end = bare_end + 2;
  }
  if (head_end == std::string_view::npos || head_end > max_head_bytes) {
    HeadResult result;
    result.outcome =
        bytes.size() >= max_head_bytes ? HeadOutcome::kTooLarge : HeadOutcome::kIncomplete;
    return result;
  }

  RequestHead head;
  head.head_bytes = head_end;
  std::vector<std::string_view> lines = Split(bytes.substr(start, head_end - start), '\n');
  // The split leaves the blank line and the empty text after it.
  lines.resize(lines.size() - 2);
  for (std::string_view& line : lines) {
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.find('\r') != std::string_view::npos) return Bad("a bare CR in the head");
  }
  if (lines.size() - 1 > kMaxFields) {
    HeadResult result;
    result.outcome = HeadOutcome::kTooLarge;
    return result;
  }

  std::vector<std::string_view> request_line = Split(lines[0], ' ');
  if (request_line.size() != 3) return Bad("the request line is not METHOD TARGET HTTP/1.x");
  head.method = request_line[0];
  if (!IsToken(head.method)) return Bad("the method is not a token");
  if (!IsTargetText(request_line[1])) return Bad("the target has a character it cannot have");
  std::optional<std::string_view> path = TargetPath(request_line[1]);
  if (!path) return Bad("the target is neither a path nor an http URL");
  head.path = *path;
  std::string_view version = request_line[2];
  if (version.size() != 8 || !version.starts_with("HTTP/1.") || !absl::ascii_isdigit(version[7])) {
    return Bad("the version is not HTTP/1.x");
  }
  head.minor_version = version[7] - '0';

  bool host = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line.starts_with(' ') || line.starts_with('\t')) return Bad("a folded header line");
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return Bad("a header line without a colon");
    std::string_view name = line.substr(0, colon);
    if (!IsToken(name)) return Bad("a header name is not a token");
    std::string_view value = TrimWhitespace(line.substr(colon + 1));
    if (!IsFieldValue(value)) return Bad("a header value has a control character");

    if (EqualsIgnoreCase(name, "Host")) {
      if (host) return Bad("two Host fields");
      host = true;
    } else if (EqualsIgnoreCase(name, "Content-Length")) {
      uint64_t length = 0;
      auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (value.empty() || value.size() > 18 || error != std::errc() ||
          end != value.data() + value.size()) {
        return Bad("Content-Length is not a number");
      }
      if (head.content_length && *head.content_length != length) {
        return Bad("two different Content-Length fields");
      }
      head.content_length = length;
    } else if (EqualsIgnoreCase(name, "Transfer-Encoding")) {
      head.chunked = true;
    } else if (EqualsIgnoreCase(name, "Connection")) {
      for (std::string_view option : Split(value, ',')) {
        option = TrimWhitespace(option);
        if (EqualsIgnoreCase(option, "close")) head.connection_close = true;
        if (EqualsIgnoreCase(option, "keep-alive")) head.connection_keep_alive = true;
      }
    } else if (EqualsIgnoreCase(name, "Expect")) {
      head.expect_continue = EqualsIgnoreCase(value, "100-continue");
    }
  }
  if (head.chunked && head.content_length) {
    return Bad("both Content-Length and Transfer-Encoding");
  }
  // A server must answer 400 to an HTTP/1.1 request without Host (RFC 9112, 3.2).
  if (head.minor_version >= 1 && !host) return Bad("no Host field");
  HeadResult result;
  result.outcome = HeadOutcome::kParsed;
  result.head = head;
  return result;
}

}  // namespace gpunode::http
