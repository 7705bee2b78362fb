#include "nvml/system.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "nvml/library.h"

namespace gpunode::nvml {

absl::StatusOr<std::string> DriverVersion(const Library& library) {
  char buffer[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(library, system_get_driver_version, buffer, sizeof buffer));
  buffer[sizeof buffer - 1] = '\0';
  return std::string(buffer);
}

absl::StatusOr<int> CudaDriverVersion(const Library& library) {
  int version = 0;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(library, system_get_cuda_driver_version, &version));
  return version;
}

std::string FormatCudaVersion(int version) {
  return absl::StrCat(version / 1000, ".", (version % 1000) / 10);
}

absl::StatusOr<unsigned> DeviceCount(const Library& library) {
  unsigned count = 0;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(library, device_get_count, &count));
  return count;
}

absl::StatusOr<Device> DeviceAt(const Library& library, unsigned index) {
  nvmlDevice_t handle = nullptr;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(library, device_get_handle_by_index, index, &handle));
  return Device(&library, handle);
}

absl::StatusOr<Device> DeviceByUuid(const Library& library, const std::string& uuid) {
  nvmlDevice_t handle = nullptr;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(library, device_get_handle_by_uuid, uuid.c_str(), &handle));
  return Device(&library, handle);
}

}  // namespace gpunode::nvml
