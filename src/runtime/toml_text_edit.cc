#include "runtime/toml_text_edit.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace gpunode::runtime {
namespace {

bool NodesEqual(const toml::node& a, const toml::node& b) {
  if (a.type() != b.type()) return false;
  return a.visit(
      [&](const auto& x) { return x == static_cast<const std::remove_cvref_t<decltype(x)>&>(b); });
}

// Tables written with [[header]] cannot be spliced key by key; inline arrays of tables can.
bool IsArrayOfTableSections(const toml::node& node) {
  const toml::array* array = node.as_array();
  if (array == nullptr) return false;
  return std::any_of(array->begin(), array->end(), [](const toml::node& element) {
    return element.is_table() && !element.as_table()->is_inline();
  });
}

bool SamePosition(const toml::source_position& a, const toml::source_position& b) {
  return a.line == b.line && a.column == b.column;
}

// True if a table under `table` was declared by the header at `position`: then `table` itself only
// exists implicitly, as that header's parent.
bool HasDescendantAt(const toml::table& table, const toml::source_position& position) {
  for (auto&& [key, child] : table) {
    const toml::table* sub = child.as_table();
    if (sub == nullptr || sub->is_inline()) continue;
    if (SamePosition(sub->source().begin, position) || HasDescendantAt(*sub, position)) return true;
  }
  return false;
}

std::string_view TrimLeft(std::string_view s) {
  size_t i = s.find_first_not_of(" \t");
  return i == std::string_view::npos ? std::string_view() : s.substr(i);
}

// Length of one key segment (bare, "basic" or 'literal') at the start of `s`, or 0.
size_t KeySegmentLength(std::string_view s) {
  if (s.empty()) return 0;
  if (s[0] == '"' || s[0] == '\'') {
    for (size_t i = 1; i < s.size(); ++i) {
      if (s[0] == '"' && s[i] == '\\') {
        ++i;
      } else if (s[i] == s[0]) {
        return i + 1;
      } else if (s[i] == '\n') {
        return 0;
      }
    }
    return 0;
  }
  size_t i = 0;
  while (i < s.size() && ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
                          (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-')) {
    ++i;
  }
  return i;
}

void MinHeaderLine(const toml::table& table, const containerd::LineIndex& lines, size_t& min_line) {
  for (auto&& [key, child] : table) {
    auto visit_table = [&](const toml::table& sub) {
      if (sub.is_inline()) return;
      size_t line = sub.source().begin.line;
      if (TrimLeft(lines.Line(line)).starts_with("[")) min_line = std::min(min_line, line);
      MinHeaderLine(sub, lines, min_line);
    };
    if (const toml::table* sub = child.as_table()) {
      visit_table(*sub);
    } else if (const toml::array* array = child.as_array()) {
      for (const toml::node& element : *array) {
        if (const toml::table* sub = element.as_table()) visit_table(*sub);
      }
    }
  }
}

toml::table* FindMutableTable(toml::table& root, const containerd::TomlPath& path) {
  toml::table* table = &root;
  for (const std::string& key : path) {
    toml::node* next = table->get(key);
    if (next == nullptr || !next->is_table()) return nullptr;
    table = next->as_table();
  }
  return table;
}

}  // namespace

TomlTextEdit::TomlTextEdit(std::string path, std::string text)
    : path_(std::move(path)), text_(std::move(text)), lines_(text_) {
  absl::StatusOr<toml::table> doc = containerd::ParseToml(text_, path_);
  parsed_ = doc.status();
  if (doc.ok()) {
    doc_ = std::move(*doc);
    expected_ = doc_;
  }
}

absl::Status TomlTextEdit::Unsupported(const containerd::TomlPath& table_path,
                                       const std::string& key, std::string_view why) const {
  containerd::TomlPath full = table_path;
  full.push_back(key);
  return absl::UnimplementedError(absl::StrCat(path_, ": cannot splice ",
                                               containerd::FormatTomlPath(full),
                                               " into this file: ", std::string(why)));
}

void TomlTextEdit::AddSplice(size_t offset, size_t length, std::string text) {
  if (offset == text_.size() && !text_.empty() && text_.back() != '\n' && length == 0) {
    text.insert(0, "\n");
  }
  splices_.push_back({offset, length, std::move(text), splices_.size()});
}

absl::Status TomlTextEdit::Set(const containerd::TomlPath& table_path, const std::string& key,
                               const toml::node& value) {
  if (!parsed_.ok()) return parsed_;
  toml::table* target = containerd::EnsureTable(expected_, table_path);
  if (target == nullptr) return Unsupported(table_path, key, "a parent key is not a table");
  value.visit([&](const auto& v) { target->insert_or_assign(key, v); });

  const toml::table* table = &doc_;
  for (const std::string& step : table_path) {
    const toml::node* next = table->get(step);
    if (next == nullptr) {
      table = nullptr;
      break;
    }
    if (IsArrayOfTableSections(*next)) {
      return Unsupported(table_path, key, "a parent is an array of [[tables]]");
    }
    if (next->is_table() && next->as_table()->is_inline()) {
      // Inside an inline table only a whole-value replacement is possible, done one level up.
      return Unsupported(table_path, key, "a parent is an inline table");
    }
    table = next->as_table();
  }
  return SetIn(table_path, table, key, value);
}

absl::Status TomlTextEdit::SetIn(const containerd::TomlPath& table_path, const toml::table* table,
                                 const std::string& key, const toml::node& value) {
  const toml::node* existing = table == nullptr ? nullptr : table->get(key);
  if (existing == nullptr) return InsertKey(table_path, table, key, value);
  if (NodesEqual(*existing, value)) return absl::OkStatus();

  const toml::table* existing_table = existing->as_table();
  if (existing_table != nullptr && !existing_table->is_inline()) {
    const toml::table* wanted = value.as_table();
    if (wanted == nullptr) return Unsupported(table_path, key, "it is a [table], not a value");
    containerd::TomlPath sub_path = table_path;
    sub_path.push_back(key);
    for (auto&& [sub_key, sub_value] : *wanted) {
      if (absl::Status st = SetIn(sub_path, existing_table, std::string(sub_key.str()), sub_value);
          !st.ok()) {
        return st;
      }
    }
    for (auto&& [sub_key, sub_value] : *existing_table) {
      if (!wanted->contains(sub_key.str())) {
        if (absl::Status st = Remove(sub_path, std::string(sub_key.str())); !st.ok()) return st;
      }
    }
    return absl::OkStatus();
  }
  if (IsArrayOfTableSections(*existing)) {
    return Unsupported(table_path, key, "it is an array of [[tables]]");
  }

  const toml::array* old_array = existing->as_array();
  const toml::array* new_array = value.as_array();
  if (old_array != nullptr && new_array != nullptr && new_array->size() > old_array->size() &&
      std::equal(old_array->begin(), old_array->end(), new_array->begin(), NodesEqual)) {
    // Growing at the end: append after the last element, so the operator's layout, trailing comma
    // and comments inside the brackets stay as written.
    std::string added;
    for (size_t i = old_array->size(); i < new_array->size(); ++i) {
      absl::StrAppend(&added, added.empty() && old_array->empty() ? "" : ", ",
                      containerd::FormatTomlValue(*new_array->get(i)));
    }
    size_t at = old_array->empty() ? lines_.Offset(old_array->source().begin) + 1
                                   : lines_.Offset(old_array->back().source().end);
    AddSplice(at, 0, added);
    return absl::OkStatus();
  }
  size_t begin = lines_.Offset(existing->source().begin);
  size_t end = lines_.Offset(existing->source().end);
  AddSplice(begin, end - begin, containerd::FormatTomlValue(value));
  return absl::OkStatus();
}

absl::Status TomlTextEdit::InsertKey(const containerd::TomlPath& table_path,
                                     const toml::table* table, const std::string& key,
                                     const toml::node& value) {
  auto append_section = [&] {
    toml::table* section = containerd::EnsureTable(appended_, table_path);
    value.visit([&](const auto& v) { section->insert_or_assign(key, v); });
    return absl::OkStatus();
  };
  if (table == nullptr) return append_section();

  TableKind kind = table_path.empty() ? TableKind::kHeader : Classify(*table);
  if (kind == TableKind::kInline) return Unsupported(table_path, key, "its table is inline");
  if (kind == TableKind::kArrayElement) {
    return Unsupported(table_path, key, "its table is an element of an array of [[tables]]");
  }
  // A new sub-table becomes its own [section] at the end of the file wherever its parent was
  // declared: TOML allows a header for a table under one declared by a header or by dotted keys.
  if (value.is_table()) return append_section();
  if (kind == TableKind::kImplicit) return append_section();
  if (kind == TableKind::kDotted) {
    return Unsupported(table_path, key, "its table is declared by dotted keys");
  }
  std::string line =
      absl::StrCat(containerd::FormatTomlKey(key), " = ", containerd::FormatTomlValue(value), "\n");
  if (table_path.empty()) {
    AddSplice(RootInsertOffset(), 0, line);
  } else {
    // Right under the header: always inside that table's section, whatever follows.
    AddSplice(lines_.LineEnd(table->source().begin.line), 0, line);
  }
  return absl::OkStatus();
}

TomlTextEdit::TableKind TomlTextEdit::Classify(const toml::table& table) const {
  if (table.is_inline()) return TableKind::kInline;
  std::string_view line = TrimLeft(lines_.Line(table.source().begin.line));
  if (line.starts_with("[[")) return TableKind::kArrayElement;
  if (!line.starts_with("[")) return TableKind::kDotted;
  return HasDescendantAt(table, table.source().begin) ? TableKind::kImplicit : TableKind::kHeader;
}

size_t TomlTextEdit::RootInsertOffset() const {
  size_t first_header = SIZE_MAX;
  MinHeaderLine(doc_, lines_, first_header);
  size_t last_value_line = 0;
  for (auto&& [key, child] : doc_) {
    const toml::table* sub = child.as_table();
    if ((sub != nullptr && !sub->is_inline()) || IsArrayOfTableSections(child)) continue;
    size_t end_line = child.source().end.line;
    if (end_line < first_header) last_value_line = std::max(last_value_line, end_line);
  }
  if (last_value_line > 0) return lines_.LineEnd(last_value_line);
  if (first_header != SIZE_MAX) return lines_.LineStart(first_header);
  return text_.size();
}

absl::Status TomlTextEdit::Remove(const containerd::TomlPath& table_path, const std::string& key) {
  if (!parsed_.ok()) return parsed_;
  if (toml::table* target = FindMutableTable(expected_, table_path)) target->erase(key);
  const toml::table* table = containerd::FindTable(doc_, table_path);
  if (table == nullptr) return absl::OkStatus();
  auto it = table->find(key);
  if (it == table->end()) return absl::OkStatus();
  const toml::node& value = it->second;
  if ((value.is_table() && !value.as_table()->is_inline()) || IsArrayOfTableSections(value)) {
    return Unsupported(table_path, key, "removing a [table] is not supported");
  }
  const toml::source_position key_begin = it->first.source().begin;
  size_t line_start = lines_.LineStart(key_begin.line);
  size_t key_offset = lines_.Offset(key_begin);
  std::string_view before(text_.data() + line_start, key_offset - line_start);
  std::string_view rest(text_.data() + key_offset, text_.size() - key_offset);
  size_t key_length = KeySegmentLength(rest);
  std::string_view after_key =
      key_length == 0 ? std::string_view() : TrimLeft(rest.substr(key_length));
  if (!TrimLeft(before).empty() || !after_key.starts_with("=")) {
    return Unsupported(table_path, key, "the key shares its line or is a dotted key");
  }
  size_t value_end = lines_.Offset(value.source().end);
  size_t line_end = lines_.LineEnd(value.source().end.line);
  std::string_view tail = TrimLeft(std::string_view(text_).substr(value_end, line_end - value_end));
  if (!tail.empty() && !tail.starts_with("#") && tail != "\n" && tail != "\r\n") {
    return Unsupported(table_path, key, "something else follows it on its line");
  }
  AddSplice(line_start, line_end - line_start, "");
  return absl::OkStatus();
}

absl::StatusOr<std::string> TomlTextEdit::Finish() const {
  if (!parsed_.ok()) return parsed_;
  std::vector<Splice> splices = splices_;
  std::stable_sort(splices.begin(), splices.end(), [](const Splice& a, const Splice& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.sequence < b.sequence;
  });
  bool crlf = text_.find("\r\n") != std::string::npos;
  auto newlines = [crlf](std::string s) {
    return crlf ? absl::StrReplaceAll(s, {{"\n", "\r\n"}}) : s;
  };

  std::string out;
  size_t at = 0;
  for (const Splice& splice : splices) {
    if (splice.offset < at) {
      return absl::InternalError(
          absl::StrCat(path_, ": overlapping edits (a gpunode bug); nothing written"));
    }
    out.append(text_, at, splice.offset - at);
    out += newlines(splice.text);
    at = splice.offset + splice.length;
  }
  out.append(text_, at, std::string::npos);
  if (!appended_.empty()) {
    if (!out.empty() && out.back() != '\n') out += newlines("\n");
    if (!out.empty()) out += newlines("\n");
    out += newlines("# Added by gpunode runtime configure.\n" +
                    containerd::FormatTomlDocument(appended_));
  }

  absl::StatusOr<toml::table> reparsed = containerd::ParseToml(out, path_);
  if (!reparsed.ok() || !(*reparsed == expected_)) {
    return absl::InternalError(
        absl::StrCat(path_, ": the spliced text would not read back as intended (",
                     reparsed.ok() ? "different content" : std::string(reparsed.status().message()),
                     "); nothing written (a gpunode bug: please report it with the file)"));
  }
  return out;
}

}  // namespace gpunode::runtime
