#include "gpu/mig_profile.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace gpunode::gpu {

std::string MigProfileName(const nvmlDeviceAttributes_t& attributes, uint64_t parent_memory_bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr uint64_t kGiB = 1024ull * 1024 * 1024;
  constexpr double kEighths = 8.0;
  uint64_t memory_gb = 0;
  if (parent_memory_bytes > 0) {
    double fraction = static_cast<double>(attributes.memorySizeMB) * kMiB /
                      static_cast<double>(parent_memory_bytes);
    fraction = std::ceil(fraction * kEighths) / kEighths;
    double parent_gb = static_cast<double>((parent_memory_bytes + kGiB - 1) / kGiB);
    memory_gb = static_cast<uint64_t>(std::llround(fraction * parent_gb));
  }
  std::string name = absl::StrCat(attributes.gpuInstanceSliceCount, "g.", memory_gb, "gb");
  if (attributes.computeInstanceSliceCount != attributes.gpuInstanceSliceCount) {
    name = absl::StrCat(attributes.computeInstanceSliceCount, "c.", name);
  }
  return name;
}

}  // namespace gpunode::gpu
