// Reads one JSON document from a file descriptor and hands out the elements of its top-level
// "items" array one at a time, so that a v1 List of any size is read through one buffer the
// size of its largest item instead of one the size of the file. What is not an item (the
// envelope: "kind", "apiVersion", "metadata", or a whole document without items) is kept, with
// each items array left empty ("items":[]), for the caller to parse at the end.
//
// Contract:
// - This is a splitter, not a validator: it finds where each item ends (strings, escapes and
//   bracket depth) and simdjson reads the item. It fails only where a wrong split would lose
//   data: the input ends inside an items array, or an item is followed by something other
//   than "," or "]". Anything else it does not understand (a document that is not an object, a
//   key that is escaped, "items" that is not an array) it keeps verbatim in the envelope, where
//   parsing it reports the error, or reads it as a whole.
// - Each item is a simdjson::padded_string_view valid until the item callback returns, with its
//   origin in the input (byte and line of its first byte) for error messages. The envelope and
//   its origin (where the items were cut out of it) are valid until the stream is destroyed.
// - Lines are counted outside strings, which is exact for valid JSON (a raw newline inside a
//   string is invalid anyway).
// - Not thread-safe; one stream reads one document.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "kube/json_walk.h"
#include "simdjson.h"

namespace gpunode::kube {

class ListStream {
 public:
  // Reads from `fd` (not closed here); `source` names it in errors. The buffer starts at
  // `buffer_bytes` and doubles while an item (or the envelope) does not fit.
  ListStream(int fd, std::string_view source, size_t buffer_bytes = kDefaultBufferBytes);
  ~ListStream();
  ListStream(const ListStream&) = delete;
  ListStream& operator=(const ListStream&) = delete;

  static constexpr size_t kDefaultBufferBytes = 1 << 20;

  struct Item {
    simdjson::padded_string_view json;
    size_t index = 0;  // position in its items array
    TextOrigin origin;
  };
  // Whether to go on after an item.
  enum class Next { kContinue, kStop };

  // Top-level members before the first items array, raw (key still escaped, value as written),
  // so the caller can learn the list's kind before its items.
  using MemberFn = absl::FunctionRef<void(std::string_view key, std::string_view value)>;
  using ItemFn = absl::FunctionRef<absl::StatusOr<Next>(const Item&)>;

  // Reads the whole input. Returns false when `item` asked to stop (the rest is not read).
  absl::StatusOr<bool> Run(MemberFn member, ItemFn item);

  // After Run returned true: the document without its items.
  simdjson::padded_string_view Envelope() const;
  const TextOrigin& EnvelopeOrigin() const { return envelope_origin_; }
  // The read buffer's size now, for measuring what a read held.
  size_t buffer_bytes() const { return capacity_; }

 private:
  // Makes more input available at size_: drops the bytes between keep_ and retain_ (items
  // already handed out), grows the buffer when it is full, and reads. False at the end.
  absl::StatusOr<bool> Refill();
  // The byte at pos_, refilling as needed; false at the end of the input.
  absl::StatusOr<bool> Peek(char& c);
  // Skips whitespace (counting lines); false at the end of the input.
  absl::StatusOr<bool> SkipSpace(char& c);
  // Moves pos_ past the JSON value starting at pos_; false at the end of the input.
  absl::StatusOr<bool> SkipValue();
  // Scans what is buffered of the value being skipped; true once its end is reached.
  bool ScanBuffered();
  // Reads the items array whose "[" was just consumed, handing each element to `item`.
  absl::StatusOr<bool> StreamItems(ItemFn item);
  // Keeps everything from pos_ to the end of the input in the envelope.
  absl::Status KeepRest();
  // "<source>: not valid JSON (<what>) near line L (byte B); is the file complete?" at pos_.
  absl::Status Malformed(std::string_view what) const;

  struct Free {
    void operator()(char* p) const;
  };

  int fd_;
  std::string source_;
  size_t first_buffer_bytes_;
  std::unique_ptr<char, Free> buf_;
  size_t capacity_ = 0;
  size_t size_ = 0;       // bytes read into the buffer
  size_t pos_ = 0;        // the next byte to scan
  size_t keep_ = 0;       // the envelope is buf_[0, keep_) while in an items array
  size_t retain_ = 0;     // in an items array, bytes from here on are still needed
  uint64_t dropped_ = 0;  // bytes of the input dropped from the buffer so far
  uint64_t line_ = 1;     // the line of pos_
  bool at_end_ = false;

  // The value being skipped, resumable across refills.
  enum class Scan { kStart, kString, kScalar, kNested } scan_ = Scan::kStart;
  bool in_string_ = false;
  size_t depth_ = 0;

  TextOrigin envelope_origin_;
};

}  // namespace gpunode::kube
