// The kubelet's kubelet_internal_checkpoint as doctor's kubelet.registered reads it.
#include <cstddef>
#include <cstdint>

#include "doctor/parsers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)gpunode::doctor::ParseKubeletCheckpoint(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
