#include "containerd/toml_document.h"

#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/printable.h"

namespace gpunode::containerd {
namespace {

// Basic strings only: containerd configs in the wild quote with "", and a literal string cannot
// hold every value (a ' inside), so one style keeps edits uniform.
constexpr toml::format_flags kFormatFlags =
    toml::toml_formatter::default_flags & ~toml::format_flags::allow_literal_strings &
    ~toml::format_flags::allow_multi_line_strings & ~toml::format_flags::indentation;

bool IsBareKey(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

size_t Utf8Length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

}  // namespace

absl::StatusOr<toml::table> ParseToml(std::string_view text, const std::string& path) {
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", e.source().begin.line, ":",
                                                   e.source().begin.column, ": ",
                                                   core::Printable(e.description())));
  }
}

const toml::table* FindTable(const toml::table& root, const TomlPath& path) {
  const toml::table* table = &root;
  for (const std::string& key : path) {
    const toml::node* next = table->get(key);
    if (next == nullptr || !next->is_table()) return nullptr;
    table = next->as_table();
  }
  return table;
}

toml::table* EnsureTable(toml::table& root, const TomlPath& path) {
  toml::table* table = &root;
  for (const std::string& key : path) {
    auto [it, inserted] = table->insert(key, toml::table{});
    if (!it->second.is_table()) return nullptr;
    table = it->second.as_table();
  }
  return table;
}

LineIndex::LineIndex(std::string_view text) : text_(text) {
  starts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') starts_.push_back(i + 1);
  }
}

size_t LineIndex::LineStart(size_t line) const {
  if (line == 0 || line > starts_.size()) return text_.size();
  return starts_[line - 1];
}

size_t LineIndex::LineEnd(size_t line) const {
  if (line == 0 || line >= starts_.size()) return text_.size();
  return starts_[line];
}

std::string_view LineIndex::Line(size_t line) const {
  size_t start = LineStart(line);
  return text_.substr(start, LineEnd(line) - start);
}

size_t LineIndex::Offset(const toml::source_position& position) const {
  size_t offset = LineStart(position.line);
  for (size_t column = 1; column < position.column && offset < text_.size(); ++column) {
    offset += Utf8Length(static_cast<unsigned char>(text_[offset]));
  }
  return std::min(offset, text_.size());
}

std::string FormatTomlKey(std::string_view key) {
  if (IsBareKey(key)) return std::string(key);
  std::ostringstream out;
  out << toml::toml_formatter{toml::value<std::string>(std::string(key)), kFormatFlags};
  return out.str();
}

std::string FormatTomlPath(const TomlPath& path) {
  std::string out;
  for (const std::string& key : path) {
    if (!out.empty()) out += '.';
    out += FormatTomlKey(key);
  }
  return out;
}

std::string FormatTomlValue(const toml::node& value) {
  if (const toml::table* table = value.as_table()) {
    std::string out = "{";
    const char* separator = " ";
    for (auto&& [key, child] : *table) {
      absl::StrAppend(&out, separator, FormatTomlKey(key.str()), " = ", FormatTomlValue(child));
      separator = ", ";
    }
    return out + (table->empty() ? "}" : " }");
  }
  std::ostringstream out;
  value.visit([&](const auto& node) { out << toml::toml_formatter{node, kFormatFlags}; });
  return out.str();
}

std::string FormatTomlDocument(const toml::table& table) {
  std::ostringstream out;
  out << toml::toml_formatter{table, kFormatFlags};
  std::string text = out.str();
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

}  // namespace gpunode::containerd
