// NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_{TX,RX} for nvmlDeviceGetFieldValues: KiB moved over one
// link (the field's scopeId) since time zero, growing with the GPU's utilization.
#pragma once

#include <cstdint>
#include <optional>

#include "gpu_state.h"
#include "nvml/abi.h"

namespace gpunode::sim {

// The counter for `field` at `now`; nullopt when the field is not an NVLink throughput field or
// names a link the GPU does not have (the caller answers NOT_SUPPORTED).
std::optional<uint64_t> nvlink_throughput_kib(GpuState& gpu, SimTime now,
                                              const nvmlFieldValue_t& field);

}  // namespace gpunode::sim
