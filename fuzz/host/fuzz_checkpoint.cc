// Fuzzes the kubelet device manager checkpoint reader: any bytes parse or fail, never crash, and
// what parses keeps its promises (allocations hold devices; ID lists are sorted, each once).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host/device_checkpoint.h"

namespace {

void CheckIds(const std::vector<std::string>& ids) {
  if (std::adjacent_find(ids.begin(), ids.end(), std::greater_equal<>()) != ids.end()) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto checkpoint = gpunode::host::ParseDeviceCheckpoint(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!checkpoint.ok()) return 0;
  for (const auto& allocation : checkpoint->allocations) {
    if (allocation.device_ids.empty()) std::abort();
    CheckIds(allocation.device_ids);
  }
  for (const auto& [resource, ids] : checkpoint->registered) CheckIds(ids);
  return 0;
}
