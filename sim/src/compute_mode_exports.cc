// nvmlDeviceGetComputeMode / nvmlDeviceSetComputeMode: every simulated GPU starts in DEFAULT and
// keeps the mode set on it, as a driver keeps it until reboot (or until someone sets it back).
// Like NVML, a MIG device handle is NOT_SUPPORTED and an unknown mode value INVALID_ARGUMENT.
#pragma GCC visibility push(default)
#include "nvml/abi.h"
#pragma GCC visibility pop

#include "device_call.h"

using gpunode::sim::GpuState;
using gpunode::sim::MigDevice;
using gpunode::sim::NodeState;

namespace {

template <typename Fn>
nvmlReturn_t on_physical_gpu(nvmlDevice_t device, Fn&& fn) {
  return gpunode::sim::with_device(
      device, [&](NodeState&, GpuState& gpu, unsigned, const MigDevice* mig) -> nvmlReturn_t {
        if (mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
        return fn(gpu);
      });
}

}  // namespace

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t* mode) {
  return on_physical_gpu(device, [&](const GpuState& gpu) -> nvmlReturn_t {
    if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *mode = gpu.compute_mode();
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode) {
  return on_physical_gpu(device, [&](GpuState& gpu) -> nvmlReturn_t {
    if (mode < NVML_COMPUTEMODE_DEFAULT || mode > NVML_COMPUTEMODE_EXCLUSIVE_PROCESS) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    gpu.set_compute_mode(mode);
    return NVML_SUCCESS;
  });
}
