// TOML as gpunode reads and writes it: toml++ errors become one Status line naming
// file:line:column, source positions map back to byte offsets so edits can splice the original
// text, and values format the way containerd configs are written (basic strings, no indentation).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "toml++/toml.h"

namespace gpunode::containerd {

// A path of keys from the document root to a table, e.g. {"plugins", "io.containerd.grpc.v1.cri"}.
using TomlPath = std::vector<std::string>;

// Parses `text`; `path` only names the file in errors ("<path>:<line>:<column>: <what>").
absl::StatusOr<toml::table> ParseToml(std::string_view text, const std::string& path);

// The table at `path` under `root`, or null when a step is missing or is not a table.
const toml::table* FindTable(const toml::table& root, const TomlPath& path);

// The table at `path` under `root`, creating missing steps; null when a step is not a table.
toml::table* EnsureTable(toml::table& root, const TomlPath& path);

// Maps toml++ source positions (1-based lines; columns count code points) to byte offsets.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text);
  size_t Offset(const toml::source_position& position) const;
  // Offset of the first byte of `line` (1-based); the text size past the last line.
  size_t LineStart(size_t line) const;
  // Offset just past the newline ending `line`, or the text size for an unterminated last line.
  size_t LineEnd(size_t line) const;
  std::string_view Line(size_t line) const;

 private:
  std::string_view text_;
  std::vector<size_t> starts_;
};

// A key as TOML source: bare when it may be, else a basic string.
std::string FormatTomlKey(std::string_view key);
// A dotted key path: plugins."io.containerd.grpc.v1.cri".containerd
std::string FormatTomlPath(const TomlPath& path);
// A value as TOML source; tables come out inline.
std::string FormatTomlValue(const toml::node& value);
// A whole document with [section] headers, the way containerd configs are usually written.
std::string FormatTomlDocument(const toml::table& table);

}  // namespace gpunode::containerd
