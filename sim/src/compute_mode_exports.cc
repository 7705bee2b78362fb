// nvmlDeviceGetComputeMode / nvmlDeviceSetComputeMode: every simulated GPU starts in DEFAULT and
// keeps the mode set on it for the life of the process, as a driver keeps it until reboot (or
// until someone sets it back). Like NVML, a MIG device handle is NOT_SUPPORTED and an unknown
// mode value INVALID_ARGUMENT.
#include <map>
#include <string>

#pragma GCC visibility push(default)
#include "nvml/abi.h"
#pragma GCC visibility pop

#include "device_call.h"

using gpunode::sim::GpuState;
using gpunode::sim::MigDevice;
using gpunode::sim::NodeState;

namespace {

// Modes that differ from DEFAULT, by GPU UUID (the index when a profile gives none). Only read
// and written under the simulator's lock.
std::map<std::string, nvmlComputeMode_t>& modes_set() {
  static auto* modes = new std::map<std::string, nvmlComputeMode_t>();
  return *modes;
}

std::string mode_key(const GpuState& gpu, size_t index) {
  return gpu.model().uuid ? *gpu.model().uuid : "#" + std::to_string(index);
}

template <typename Fn>
nvmlReturn_t on_physical_gpu(nvmlDevice_t device, Fn&& fn) {
  return gpunode::sim::with_device(
      device, [&](NodeState&, GpuState& gpu, unsigned index, const MigDevice* mig) -> nvmlReturn_t {
        if (mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
        return fn(mode_key(gpu, index));
      });
}

}  // namespace

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t* mode) {
  return on_physical_gpu(device, [&](const std::string& key) -> nvmlReturn_t {
    if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    auto it = modes_set().find(key);
    *mode = it == modes_set().end() ? NVML_COMPUTEMODE_DEFAULT : it->second;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode) {
  return on_physical_gpu(device, [&](const std::string& key) -> nvmlReturn_t {
    if (mode < NVML_COMPUTEMODE_DEFAULT || mode > NVML_COMPUTEMODE_EXCLUSIVE_PROCESS) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (mode == NVML_COMPUTEMODE_DEFAULT) {
      modes_set().erase(key);
    } else {
      modes_set()[key] = mode;
    }
    return NVML_SUCCESS;
  });
}
