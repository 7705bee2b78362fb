// Fuzzes the reader of the DRA plugin's state file, which doctor's dra.slice reads from the
// kubelet's plugins directory: any bytes parse or fail with a message, never crash; what parses is
// written back by the plugin's own formatter and reads again as the same state.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host/dra_plugin_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<gpunode::host::DraPluginState> state = gpunode::host::ParseDraPluginState(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!state.ok()) {
    if (state.status().message().empty()) std::abort();
    return 0;
  }
  std::string written = gpunode::host::FormatDraPluginState(*state);
  absl::StatusOr<gpunode::host::DraPluginState> again = gpunode::host::ParseDraPluginState(written);
  if (!again.ok() || gpunode::host::FormatDraPluginState(*again) != written) std::abort();
  return 0;
}
