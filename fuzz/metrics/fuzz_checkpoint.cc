// Fuzzes the kubelet device manager checkpoint reader: any bytes parse or fail, never crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "metrics/device_plugin_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto entries = gpunode::metrics::ParseDevicePluginCheckpoint(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (entries.ok()) {
    for (const auto& entry : *entries) {
      if (entry.pod_uid.empty() || entry.device_ids.empty()) std::abort();
    }
  }
  return 0;
}
