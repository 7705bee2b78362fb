#include "kube/list_stream.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/status_macros.h"
#include "core/text.h"

namespace gpunode::kube {

using core::StrCat;

namespace {

constexpr size_t kPadding = simdjson::SIMDJSON_PADDING;
// The least a refill asks read() for: a buffer with less room than this grows instead.
constexpr size_t kMinRead = 4096;

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

bool EndsScalar(char c) { return IsSpace(c) || c == ',' || c == '}' || c == ']'; }

// The bytes that matter outside strings while skipping a nested value; runs of anything else
// (mostly indentation) are passed over in a tight loop.
constexpr std::array<bool, 256> kStops = [] {
  std::array<bool, 256> stops{};
  for (unsigned char c : {'"', '{', '}', '[', ']', '\n'}) stops[c] = true;
  return stops;
}();

}  // namespace

void ListStream::Free::operator()(char* p) const { std::free(p); }

ListStream::ListStream(int fd, std::string_view source, size_t buffer_bytes)
    : fd_(fd), source_(source), first_buffer_bytes_(std::max(buffer_bytes, size_t{1})) {}

ListStream::~ListStream() = default;

absl::StatusOr<bool> ListStream::Refill() {
  if (at_end_) return false;
  if (retain_ > keep_) {
    // Forget the items already handed out (and what separated them): only the envelope before
    // keep_ and the bytes from retain_ on are still needed.
    const size_t drop = retain_ - keep_;
    std::memmove(buf_.get() + keep_, buf_.get() + retain_, size_ - retain_);
    size_ -= drop;
    pos_ -= drop;
    retain_ = keep_;
    dropped_ += drop;
  }
  if (capacity_ - size_ < kPadding + kMinRead) {
    size_t wanted = capacity_ == 0 ? first_buffer_bytes_ + kPadding : capacity_ * 2;
    wanted = std::max(wanted, size_ + kPadding + kMinRead);
    // realloc lets glibc grow a large buffer with mremap instead of copying it.
    char* grown = static_cast<char*>(std::realloc(buf_.get(), wanted));
    if (grown == nullptr) {
      return absl::ResourceExhaustedError(
          StrCat(source_, ": out of memory reading it (", size_, " bytes held for one item)"));
    }
    (void)buf_.release();
    buf_.reset(grown);
    capacity_ = wanted;
  }
  for (;;) {
    ssize_t n = ::read(fd_, buf_.get() + size_, capacity_ - kPadding - size_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(StrCat(source_, ": cannot read: ", std::strerror(errno)));
    if (n == 0) at_end_ = true;
    size_ += static_cast<size_t>(n);
    // simdjson may read the padding; give it defined bytes.
    std::memset(buf_.get() + size_, 0, kPadding);
    return n > 0;
  }
}

absl::StatusOr<bool> ListStream::Peek(char& c) {
  if (pos_ == size_) {
    ASSIGN_OR_RETURN(bool more, Refill());
    if (!more) return false;
  }
  c = buf_.get()[pos_];
  return true;
}

absl::StatusOr<bool> ListStream::SkipSpace(char& c) {
  for (;;) {
    ASSIGN_OR_RETURN(bool more, Peek(c));
    if (!more) return false;
    if (!IsSpace(c)) return true;
    if (c == '\n') ++line_;
    ++pos_;
  }
}

absl::StatusOr<bool> ListStream::SkipValue() {
  scan_ = Scan::kStart;
  in_string_ = false;
  depth_ = 0;
  for (;;) {
    if (pos_ == size_) {
      ASSIGN_OR_RETURN(bool more, Refill());
      // A scalar may be the last thing in the input.
      if (!more) return scan_ == Scan::kScalar;
    }
    if (ScanBuffered()) return true;
  }
}

bool ListStream::ScanBuffered() {
  const char* const base = buf_.get();
  const char* p = base + pos_;
  const char* const end = base + size_;
  if (scan_ == Scan::kStart) {
    if (*p == '"') {
      scan_ = Scan::kString;
      in_string_ = true;
      ++p;
    } else if (*p == '{' || *p == '[') {
      scan_ = Scan::kNested;
      depth_ = 1;
      ++p;
    } else {
      scan_ = Scan::kScalar;
    }
  }
  if (scan_ == Scan::kScalar) {
    while (p < end && !EndsScalar(*p)) ++p;
    pos_ = static_cast<size_t>(p - base);
    return p < end;
  }
  // Strings are most of the bytes: jump from quote to quote, and count the backslashes before a
  // quote to tell an escaped one (odd) from the end of the string. The string's opening quote is
  // still in the buffer, so the count stops there at the latest.
  while (p < end) {
    if (in_string_) {
      const char* quote =
          static_cast<const char*>(std::memchr(p, '"', static_cast<size_t>(end - p)));
      if (quote == nullptr) {
        p = end;
        break;
      }
      p = quote + 1;
      size_t backslashes = 0;
      while (quote - backslashes > base &&
             quote[-1 - static_cast<ptrdiff_t>(backslashes)] == '\\') {
        ++backslashes;
      }
      if (backslashes % 2 == 1) continue;
      in_string_ = false;
      if (scan_ == Scan::kString) {
        pos_ = static_cast<size_t>(p - base);
        return true;
      }
      continue;
    }
    while (p < end && !kStops[static_cast<unsigned char>(*p)]) ++p;
    if (p == end) break;
    switch (*p++) {
      case '"':
        in_string_ = true;
        break;
      case '{':
      case '[':
        ++depth_;
        break;
      case '}':
      case ']':
        if (--depth_ == 0) {
          pos_ = static_cast<size_t>(p - base);
          return true;
        }
        break;
      case '\n':
        ++line_;
        break;
      default:
        break;
    }
  }
  pos_ = static_cast<size_t>(p - base);
  return false;
}

absl::Status ListStream::Malformed(std::string_view what) const {
  return absl::InvalidArgumentError(StrCat(source_, ": not valid JSON (", what, ") near line ",
                                           line_, " (byte ", dropped_ + pos_,
                                           "); is the file complete?"));
}

absl::StatusOr<bool> ListStream::StreamItems(ItemFn item) {
  // Everything before the "[" stays; the items go once handed out.
  keep_ = retain_ = pos_;
  TextOrigin::Cut cut;
  cut.at = keep_;
  const uint64_t cut_byte = dropped_ + pos_;
  const uint64_t cut_line = line_;
  char c = 0;
  for (size_t index = 0;; ++index) {
    retain_ = pos_;
    ASSIGN_OR_RETURN(bool more, SkipSpace(c));
    if (!more) return Malformed(StrCat("the input ends inside items, before items[", index, "]"));
    if (c == ']' && index == 0) break;
    if (c == ']' || c == ',')
      return Malformed(StrCat("expected items[", index, "], found ", std::string_view(&c, 1)));
    Item next;
    next.index = index;
    next.origin.byte = dropped_ + pos_;
    next.origin.line = line_;
    retain_ = pos_;
    ASSIGN_OR_RETURN(more, SkipValue());
    if (!more) return Malformed(StrCat("the input ends inside items[", index, "]"));
    // A refill may have moved the item down the buffer; retain_ still marks its first byte.
    next.json =
        simdjson::padded_string_view(buf_.get() + retain_, pos_ - retain_, capacity_ - retain_);
    ASSIGN_OR_RETURN(Next after, item(next));
    if (after == Next::kStop) return false;
    retain_ = pos_;
    ASSIGN_OR_RETURN(more, SkipSpace(c));
    if (!more) return Malformed(StrCat("the input ends after items[", index, "]"));
    if (c == ']') break;
    if (c != ',') return Malformed(StrCat("expected , or ] after items[", index, "]"));
    ++pos_;
  }
  // pos_ is at the "]": close the envelope's gap so that "[" and "]" meet.
  cut.bytes = dropped_ + pos_ - cut_byte;
  cut.lines = line_ - cut_line;
  envelope_origin_.cuts.push_back(cut);
  const size_t drop = pos_ - keep_;
  std::memmove(buf_.get() + keep_, buf_.get() + pos_, size_ - pos_);
  size_ -= drop;
  dropped_ += drop;
  pos_ = keep_ + 1;
  keep_ = retain_ = 0;
  return true;
}

absl::Status ListStream::KeepRest() {
  for (;;) {
    pos_ = size_;
    ASSIGN_OR_RETURN(bool more, Refill());
    if (!more) return absl::OkStatus();
  }
}

absl::StatusOr<bool> ListStream::Run(MemberFn member, ItemFn item) {
  char c = 0;
  ASSIGN_OR_RETURN(bool more, SkipSpace(c));
  if (more && c == '{') {
    ++pos_;
    // Reads `"key": value` pairs while the document is what a List looks like; at anything
    // else, the rest is kept as it is for the envelope's parser to judge.
    for (;;) {
      ASSIGN_OR_RETURN(more, SkipSpace(c));
      if (!more || c != '"') break;
      const size_t key_begin = pos_;
      ASSIGN_OR_RETURN(more, SkipValue());
      if (!more) break;
      const size_t key_end = pos_;
      ASSIGN_OR_RETURN(more, SkipSpace(c));
      if (!more || c != ':') break;
      ++pos_;
      ASSIGN_OR_RETURN(more, SkipSpace(c));
      if (!more) break;
      std::string_view key(buf_.get() + key_begin + 1, key_end - key_begin - 2);
      if (key == "items" && c == '[') {
        ++pos_;
        ASSIGN_OR_RETURN(bool complete, StreamItems(item));
        if (!complete) return false;
      } else {
        const size_t value_begin = pos_;
        ASSIGN_OR_RETURN(more, SkipValue());
        if (!more) break;
        // Outside items nothing is dropped, so the key is still where it was.
        member(std::string_view(buf_.get() + key_begin + 1, key_end - key_begin - 2),
               std::string_view(buf_.get() + value_begin, pos_ - value_begin));
      }
      ASSIGN_OR_RETURN(more, SkipSpace(c));
      if (!more || c != ',') break;
      ++pos_;
    }
  }
  RETURN_IF_ERROR(KeepRest());
  return true;
}

simdjson::padded_string_view ListStream::Envelope() const {
  return simdjson::padded_string_view(buf_.get(), size_, capacity_);
}

}  // namespace gpunode::kube
