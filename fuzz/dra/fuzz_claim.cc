// Fuzzes the reader of a ResourceClaim's allocation: any bytes are read or refused, never crash;
// what is read belongs to the driver and pool asked for.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dra/claim_allocation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto devices = gpunode::dra::ReadAllocation(text, "uid-1", "gpu.nvidia.com", "node-a");
  if (!devices.ok()) return 0;
  for (const auto& device : *devices) {
    if (device.pool != "node-a") std::abort();
  }
  return 0;
}
