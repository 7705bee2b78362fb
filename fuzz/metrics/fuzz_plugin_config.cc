// Fuzzes the labels' reader of the device plugin's config file: any bytes parse or fail with one
// line naming the file, without leaking a yaml-cpp exception; what parses is within the rules.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "labels/plugin_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<gpunode::labels::PluginConfig> config = gpunode::labels::ParsePluginConfig(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  if (!config.ok()) {
    std::string_view message(config.status().message().data(), config.status().message().size());
    if (message.rfind("fuzz.yaml", 0) != 0 || message.find('\n') != std::string_view::npos) {
      std::fprintf(stderr, "bad error message: [%.*s]\n", static_cast<int>(message.size()),
                   message.data());
      std::abort();
    }
    return 0;
  }
  for (const gpunode::labels::ReplicatedResource& r : config->sharing.resources) {
    if (r.replicas < 2 || r.name.rfind("nvidia.com/", 0) != 0 || r.name.size() > 63) std::abort();
  }
  return 0;
}
