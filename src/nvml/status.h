// Mapping of nvmlReturn_t to absl::Status, keeping the NVML code so callers can branch on it.
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "nvml/abi.h"

namespace gpunode::nvml {

// "NVML_SUCCESS", "NVML_ERROR_GPU_IS_LOST", ...; "NVML_ERROR_<n>" for codes this build
// does not know.
absl::string_view ReturnName(nvmlReturn_t ret);

// OK for NVML_SUCCESS; otherwise a Status whose message names the call, the NVML error name and
// the driver's own description, e.g.
// "nvmlDeviceGetPowerUsage: NVML_ERROR_NOT_SUPPORTED (Not Supported)".
absl::Status FromReturn(nvmlReturn_t ret, absl::string_view call, absl::string_view description);

// The NVML code carried by a Status made by FromReturn; NVML_SUCCESS for OK and for statuses
// that did not come from NVML.
nvmlReturn_t ReturnOf(const absl::Status& status);

// The value is not reported by this GPU or driver (also: the symbol is missing).
bool IsNotSupported(const absl::Status& status);
// The GPU fell off the bus.
bool IsGpuLost(const absl::Status& status);

}  // namespace gpunode::nvml
