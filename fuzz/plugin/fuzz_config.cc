// Fuzzes the strict config reader: any bytes must load or fail with one line naming the file,
// without leaking an exception; the same for bytes read as a ConfigMap manifest whose data keys
// are configs (--check-config on deploy/'s ConfigMaps).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/config_map_manifest.h"
#include "plugin_config/config_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (std::optional<gpunode::core::ConfigMapManifest> manifest = gpunode::core::AsConfigMap(text)) {
    for (const auto& [key, config] : manifest->data) {
      std::string label = gpunode::core::DataKeyLabel("fuzz.yaml", key);
      absl::StatusOr<gpunode::plugin_config::ConfigFile> file =
          gpunode::plugin_config::ParseConfigFile(config, label);
      if (!file.ok() && (file.status().message().rfind(label, 0) != 0 ||
                         file.status().message().find('\n') != std::string::npos)) {
        std::abort();
      }
    }
  }
  absl::StatusOr<gpunode::plugin_config::ConfigFile> file =
      gpunode::plugin_config::ParseConfigFile(text, "fuzz.yaml");
  if (!file.ok()) {
    std::string message(file.status().message());
    if (message.rfind("fuzz.yaml", 0) != 0 || message.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  gpunode::plugin_config::Config config =
      gpunode::plugin_config::Merge({&file->flags}, file->time_slicing);
  for (const auto& r : config.time_slicing.resources)
    if (r.replicas < 2) std::abort();
  (void)gpunode::plugin_config::ConfigJson(config);
  return 0;
}
