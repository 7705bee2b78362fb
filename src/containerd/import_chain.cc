#include "containerd/import_chain.h"

#include <fnmatch.h>
#include <glob.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/file_io.h"
#include "core/status_macros.h"

namespace gpunode::containerd {
namespace {

namespace fs = std::filesystem;

// containerd's resolveImports: globs as written (so relative to its working directory), plain
// paths cleaned and taken against the importing file's directory. A glob also matches the
// drop-in gpunode is about to create, in its sorted place.
// `path` under `root` ("/" leaves it as it is).
std::string Under(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return path;
  return (fs::path(root) / fs::path(path).relative_path()).string();
}

std::vector<std::string> Resolve(const std::string& parent, const std::vector<std::string>& imports,
                                 const std::string& drop_in, const std::string& root) {
  std::vector<std::string> out;
  for (const std::string& import : imports) {
    if (absl::StrContains(import, "*")) {
      std::vector<std::string> matches;
      glob_t found{};
      std::string pattern = Under(root, import);
      if (::glob(pattern.c_str(), 0, nullptr, &found) == 0) {
        for (size_t i = 0; i < found.gl_pathc; ++i) {
          std::string match = found.gl_pathv[i];
          matches.push_back(pattern == import ? match
                                              : match.substr(pattern.size() - import.size()));
        }
      }
      ::globfree(&found);
      if (!drop_in.empty() && ::fnmatch(import.c_str(), drop_in.c_str(), FNM_PATHNAME) == 0 &&
          std::find(matches.begin(), matches.end(), drop_in) == matches.end()) {
        matches.insert(std::upper_bound(matches.begin(), matches.end(), drop_in), drop_in);
      }
      out.insert(out.end(), matches.begin(), matches.end());
      continue;
    }
    fs::path path = fs::path(import).lexically_normal();
    if (path.is_relative()) path = (fs::path(parent).parent_path() / path).lexically_normal();
    out.push_back(path.string());
  }
  return out;
}

absl::StatusOr<ImportChain> Walk(const ContainerdConfig& main, const std::string& drop_in,
                                 const std::vector<std::string>& main_imports,
                                 const std::string& root) {
  ImportChain chain;
  std::string drop_in_normal = drop_in.empty() ? "" : NormalPath(drop_in);
  std::deque<std::pair<std::string, std::string>> pending;  // path, importing file
  std::set<std::string> loaded = {main.path};
  chain.files.push_back({main.path, main.doc});
  for (const std::string& path : Resolve(main.path, main_imports, drop_in_normal, root)) {
    pending.emplace_back(path, main.path);
  }
  bool found = false;
  while (!pending.empty()) {
    auto [path, parent] = pending.front();
    pending.pop_front();
    if (!loaded.insert(path).second) continue;
    if (!drop_in.empty() && NormalPath(path) == drop_in_normal) {
      chain.drop_in_index = chain.files.size();
      chain.files.push_back({path, toml::table{}});
      found = true;
      continue;
    }
    absl::StatusOr<std::string> text = core::ReadFile(Under(root, path));
    if (!text.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          parent, ": imports ", path, ", which cannot be read (", text.status().message(),
          "), so containerd would not start; fix the imports line first"));
    }
    ASSIGN_OR_RETURN(toml::table doc, ParseToml(*text, path));
    ASSIGN_OR_RETURN(std::vector<std::string> imports, ImportsOf(path, doc));
    for (const std::string& next : Resolve(path, imports, drop_in_normal, root)) {
      pending.emplace_back(next, path);
    }
    chain.files.push_back({path, std::move(doc)});
  }
  if (!found) chain.drop_in_index = chain.files.size();
  chain.drop_in_already_imported = found;
  return chain;
}

}  // namespace

std::string NormalPath(const std::string& path) {
  // Symlinks resolved: an atomic rename onto a symlinked config would replace the link itself.
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(path, ec);
  if (!ec) return canonical.string();
  fs::path absolute = fs::absolute(path, ec);
  return (ec ? fs::path(path) : absolute).lexically_normal().string();
}

absl::StatusOr<std::vector<std::string>> ImportsOf(const std::string& path,
                                                   const toml::table& doc) {
  std::vector<std::string> imports;
  const toml::node* node = doc.get("imports");
  if (node == nullptr) return imports;
  const toml::array* array = node->as_array();
  bool ok = array != nullptr;
  if (ok) {
    for (const toml::node& element : *array) {
      std::optional<std::string> value = element.value_exact<std::string>();
      if (!value) {
        ok = false;
        break;
      }
      imports.push_back(*value);
    }
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", node->source().begin.line, ":", node->source().begin.column,
                     ": imports must be an array of file paths, e.g. imports = "
                     "[\"/etc/containerd/conf.d/*.toml\"]"));
  }
  return imports;
}

absl::StatusOr<ImportChain> ResolveImportChain(const ContainerdConfig& main,
                                               const std::string& drop_in,
                                               const std::string& root) {
  ASSIGN_OR_RETURN(std::vector<std::string> imports, ImportsOf(main.path, main.doc));
  ASSIGN_OR_RETURN(ImportChain chain, Walk(main, drop_in, imports, root));
  if (drop_in.empty() || chain.drop_in_already_imported) return chain;
  imports.push_back(drop_in);
  ASSIGN_OR_RETURN(chain, Walk(main, drop_in, imports, root));
  chain.drop_in_already_imported = false;
  return chain;
}

}  // namespace gpunode::containerd
