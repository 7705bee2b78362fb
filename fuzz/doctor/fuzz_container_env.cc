// A pod's environment and library file names as doctor's container.* checks read them:
// NVIDIA_VISIBLE_DEVICES, CUDA_VERSION / NV_CUDA_CUDART_VERSION, and libcuda.so.<version> names.
#include <cstddef>
#include <cstdint>
#include <string>

#include "doctor/container_readings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  gpunode::doctor::VisibleDevices visible = gpunode::doctor::ParseVisibleDevices(text);
  for (const gpunode::doctor::DeviceRequest& device : visible.devices) {
    (void)gpunode::doctor::MigParentUuid(device.text);
  }
  (void)gpunode::doctor::CudaVersionPrefix(text);
  (void)gpunode::doctor::LibraryFileVersion(text, "libcudart.so");
  return 0;
}
