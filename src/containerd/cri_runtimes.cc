#include "containerd/cri_runtimes.h"

#include "containerd/containerd_config.h"
#include "containerd/toml_document.h"

namespace gpunode::containerd {
namespace {

void Overlay(toml::table& into, const toml::table& from) {
  for (auto it = from.begin(); it != from.end(); ++it) {
    toml::node* existing = into.get(it->first);
    if (existing != nullptr && existing->is_table() && it->second.is_table()) {
      Overlay(*existing->as_table(), *it->second.as_table());
    } else {
      it->second.visit([&](const auto& v) { into.insert_or_assign(it->first, v); });
    }
  }
}

int FileVersion(const toml::table& doc) {
  std::optional<int64_t> version = doc["version"].value_exact<int64_t>();
  return version ? static_cast<int>(*version) : 1;
}

}  // namespace

CriRuntimes MergedCriRuntimes(const ImportChain& chain, bool deep_merge) {
  toml::table merged;
  CriRuntimes result;
  for (const ImportedFile& file : chain.files) {
    const toml::table* plugin =
        FindTable(file.doc, {"plugins", CriPluginId(FileVersion(file.doc))});
    if (plugin == nullptr) continue;
    if (deep_merge) {
      Overlay(merged, *plugin);
    } else {
      merged = *plugin;
    }
    if (FindTable(*plugin, {"containerd"}) != nullptr) result.source = file.path;
  }
  if (const toml::table* containerd = FindTable(merged, {"containerd"})) {
    if (std::optional<std::string> name =
            (*containerd)["default_runtime_name"].value_exact<std::string>()) {
      result.default_runtime = *name;
    }
    if (const toml::table* runtimes = FindTable(*containerd, {"runtimes"})) {
      result.runtimes = *runtimes;
    }
  }
  return result;
}

}  // namespace gpunode::containerd
