// Node-wide NVML queries: versions and device enumeration.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "nvml/device.h"

namespace gpunode::nvml {

class Library;

absl::StatusOr<std::string> DriverVersion(const Library& library);
// As NVML reports it: 12040 for CUDA 12.4.
absl::StatusOr<int> CudaDriverVersion(const Library& library);
// "12.4" from 12040.
std::string FormatCudaVersion(int version);
absl::StatusOr<unsigned> DeviceCount(const Library& library);
absl::StatusOr<Device> DeviceAt(const Library& library, unsigned index);
absl::StatusOr<Device> DeviceByUuid(const Library& library, const std::string& uuid);

}  // namespace gpunode::nvml
