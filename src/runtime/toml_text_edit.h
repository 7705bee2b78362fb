// Key-level edits of TOML text that splice the original bytes instead of re-serializing them, so
// comments, key order and layout of everything not edited survive. The result is re-parsed and
// compared with the intended document before it is handed out.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "containerd/toml_document.h"
#include "toml++/toml.h"

namespace gpunode::runtime {

class TomlTextEdit {
 public:
  // Parses `text` itself: toml++ does not copy source positions with a table, so the positions
  // the splices need exist only in a parse this object owns. A parse error is returned by every
  // call. `path` names the file in errors.
  TomlTextEdit(std::string path, std::string text);
  TomlTextEdit(const TomlTextEdit&) = delete;
  TomlTextEdit& operator=(const TomlTextEdit&) = delete;

  // Makes `key` in the table at `table_path` equal `value`, touching as little text as it can:
  // an equal value is left alone, a scalar or array is replaced where it stands, an array that only
  // grows at its end gets the new elements appended, a missing key goes right under its table's
  // [header], and a table that has no header of its own gets a new section at the end of the file.
  // Tables are compared key by key, so only what differs is written. Shapes it cannot edit safely
  // (arrays of tables, keys defined by dotted keys or inline tables) are Unimplemented.
  absl::Status Set(const containerd::TomlPath& table_path, const std::string& key,
                   const toml::node& value);

  // Deletes a `key = value` line. Unimplemented if the key shares its line with anything but a
  // comment, or is a [table].
  absl::Status Remove(const containerd::TomlPath& table_path, const std::string& key);

  // The edited text. Internal if it does not parse back to the intended document (a bug, never
  // written anywhere).
  absl::StatusOr<std::string> Finish() const;

  const toml::table& expected() const { return expected_; }

 private:
  struct Splice {
    size_t offset;
    size_t length;  // bytes of the original replaced
    std::string text;
    size_t sequence;  // keeps insertions at one offset in call order
  };
  enum class TableKind { kHeader, kImplicit, kInline, kDotted, kArrayElement };

  absl::Status SetIn(const containerd::TomlPath& table_path, const toml::table* table,
                     const std::string& key, const toml::node& value);
  absl::Status InsertKey(const containerd::TomlPath& table_path, const toml::table* table,
                         const std::string& key, const toml::node& value);
  TableKind Classify(const toml::table& table) const;
  size_t RootInsertOffset() const;
  void AddSplice(size_t offset, size_t length, std::string text);
  absl::Status Unsupported(const containerd::TomlPath& table_path, const std::string& key,
                           std::string_view why) const;

  std::string path_;
  std::string text_;
  absl::Status parsed_;
  toml::table doc_;
  containerd::LineIndex lines_;
  toml::table expected_;
  toml::table appended_;  // new sections, written together at the end of the file
  std::vector<Splice> splices_;
};

}  // namespace gpunode::runtime
