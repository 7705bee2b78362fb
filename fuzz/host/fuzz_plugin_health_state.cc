// Fuzzes the reader of the device plugin's health state file, which doctor reads from the kubelet
// directory: any bytes parse or fail with a message, never crash; what parses is written back by
// the plugin's own formatter and reads again as the same state.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host/plugin_health_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<gpunode::host::PluginHealthState> state = gpunode::host::ParsePluginHealthState(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!state.ok()) {
    if (state.status().message().empty()) std::abort();
    return 0;
  }
  std::string written = gpunode::host::FormatPluginHealthState(*state);
  absl::StatusOr<gpunode::host::PluginHealthState> again =
      gpunode::host::ParsePluginHealthState(written);
  if (!again.ok() || gpunode::host::FormatPluginHealthState(*again) != written) std::abort();
  return 0;
}
