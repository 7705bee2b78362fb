// /proc/driver/nvidia/version as doctor's driver.version reads it.
#include <cstddef>
#include <cstdint>

#include "doctor/parsers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)gpunode::doctor::ParseNvrmVersion(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
