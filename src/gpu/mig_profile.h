// Names of MIG instance profiles ("1g.10gb", "1c.3g.40gb") as NVIDIA's tools derive them.
#pragma once

#include <cstdint>
#include <string>

#include "nvml/abi.h"

namespace gpunode::gpu {

// The profile name of a MIG device from its attributes and its parent GPU's total memory.
// Memory is rounded the way NVIDIA's go-nvlib does: the instance's share of the parent's memory,
// rounded up to eighths, times the parent's memory in whole GiB (rounded up), rounded to GB.
std::string MigProfileName(const nvmlDeviceAttributes_t& attributes, uint64_t parent_memory_bytes);

}  // namespace gpunode::gpu
