// /etc/nvidia-container-runtime/config.toml as doctor's runtime.toolkit-config reads it, and the
// dpkg status file behind runtime.toolkit-version.
#include <cstddef>
#include <cstdint>

#include "doctor/parsers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  (void)gpunode::doctor::ParseToolkitConfig(text, "config.toml");
  (void)gpunode::doctor::DpkgInstalledVersion(text, "nvidia-container-toolkit");
  return 0;
}
