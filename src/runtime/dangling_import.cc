#include "runtime/dangling_import.h"

#include <filesystem>
#include <vector>

#include "absl/strings/match.h"
#include "containerd/import_chain.h"
#include "containerd/toml_document.h"
#include "core/status_macros.h"
#include "runtime/toml_text_edit.h"

namespace gpunode::runtime {
namespace {

namespace fs = std::filesystem;

// containerd's resolveImports for a plain path: cleaned, relative ones against the config's
// directory.
std::string Resolved(const std::string& config_path, const std::string& import) {
  fs::path path = fs::path(import).lexically_normal();
  if (path.is_relative()) path = (fs::path(config_path).parent_path() / path).lexically_normal();
  return containerd::NormalPath(path.string());
}

}  // namespace

absl::StatusOr<std::optional<DanglingImport>> FindDanglingImport(const std::string& config_path,
                                                                 const std::string& config_text,
                                                                 const std::string& drop_in,
                                                                 bool drop_in_exists) {
  if (drop_in_exists || drop_in.empty()) return std::nullopt;
  absl::StatusOr<toml::table> doc = containerd::ParseToml(config_text, config_path);
  if (!doc.ok()) return std::nullopt;
  absl::StatusOr<std::vector<std::string>> imports = containerd::ImportsOf(config_path, *doc);
  if (!imports.ok()) return std::nullopt;

  const std::string target = containerd::NormalPath(drop_in);
  toml::array kept;
  bool found = false;
  for (const std::string& import : *imports) {
    if (!absl::StrContains(import, "*") && Resolved(config_path, import) == target) {
      found = true;
    } else {
      kept.push_back(import);
    }
  }
  if (!found) return std::nullopt;

  TomlTextEdit edit(config_path, config_text);
  // gpunode added the whole line when there was none; an `imports = []` left behind would be a
  // line the operator never wrote.
  absl::Status st = kept.empty() ? edit.Remove({}, "imports") : edit.Set({}, "imports", kept);
  if (absl::IsUnimplemented(st)) st = edit.Set({}, "imports", kept);
  RETURN_IF_ERROR(st);
  ASSIGN_OR_RETURN(std::string text, edit.Finish());
  return DanglingImport{config_path, target, std::move(text)};
}

}  // namespace gpunode::runtime
