#include "runtime/drop_in.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "containerd/import_chain.h"
#include "containerd/toml_document.h"

namespace gpunode::runtime {

std::string DefaultDropInPath(const std::string& config_path) {
  std::filesystem::path dir =
      std::filesystem::path(containerd::NormalPath(config_path)).parent_path();
  return (dir / "conf.d" / "99-nvidia.toml").string();
}

std::string RenderDropIn(int version, const std::string& plugin_id, const toml::table& cri,
                         const std::string& main_path) {
  toml::table doc;
  if (version >= 2) doc.insert("version", version);
  doc.insert("plugins", toml::table{{plugin_id, cri}});
  std::string plugin = containerd::FormatTomlKey(plugin_id);
  return absl::StrCat(
      "# Written by `gpunode runtime configure` for ", main_path,
      ":\n# the nvidia runtime handler, with a copy of the whole plugins.", plugin,
      "\n# table of that file: containerd before 2.1 lets an imported file replace a plugin's\n"
      "# table instead of merging it. Change the main file and run the command again rather\n"
      "# than editing this copy; `gpunode runtime revert` removes it.\n\n",
      containerd::FormatTomlDocument(doc));
}

}  // namespace gpunode::runtime
