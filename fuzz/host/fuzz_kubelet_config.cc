// Fuzzes the reader of the kubelet's config file (KubeletConfiguration, YAML or JSON): any bytes
// apply or fail, never crash; a failure leaves one line naming the file; what applies is recorded
// as read.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host/kubelet_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpunode::host::KubeletImageSettings settings;
  absl::Status status = gpunode::host::ApplyKubeletConfigFile(
      std::string_view(reinterpret_cast<const char*>(data), size), "/k.yaml", settings);
  if (!status.ok()) {
    if (status.message().substr(0, 7) != "/k.yaml") std::abort();
    return 0;
  }
  if (settings.files.size() != 1) std::abort();
  return 0;
}
