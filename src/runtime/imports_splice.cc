#include "runtime/imports_splice.h"

#include "absl/strings/str_cat.h"
#include "containerd/import_chain.h"
#include "core/status_macros.h"
#include "runtime/toml_text_edit.h"

namespace gpunode::runtime {

absl::StatusOr<std::string> SpliceImport(const containerd::ContainerdConfig& config,
                                         const std::string& import_path) {
  ASSIGN_OR_RETURN(std::vector<std::string> imports,
                   containerd::ImportsOf(config.path, config.doc));
  TomlTextEdit edit(config.path, config.text);
  if (config.blank) RETURN_IF_ERROR(edit.Set({}, "version", toml::value<int64_t>(config.version)));
  toml::array wanted;
  for (const std::string& import : imports) wanted.push_back(import);
  wanted.push_back(import_path);
  absl::Status st = edit.Set({}, "imports", wanted);
  if (absl::IsUnimplemented(st)) {
    return absl::InvalidArgumentError(absl::StrCat(st.message(), "; add \"", import_path,
                                                   "\" to imports by hand or use --in-place"));
  }
  RETURN_IF_ERROR(st);
  return edit.Finish();
}

}  // namespace gpunode::runtime
