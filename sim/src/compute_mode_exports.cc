// nvmlDeviceGetComputeMode / nvmlDeviceSetComputeMode: every simulated GPU starts in DEFAULT and
// keeps the mode set on it for the life of the process, as a driver keeps it until reboot (or
// until someone sets it back). Like NVML, a MIG device handle is NOT_SUPPORTED and an unknown
// mode value INVALID_ARGUMENT.
#include <map>
#include <string>

#pragma GCC visibility push(default)
#include "nvml/abi.h"
#pragma GCC visibility pop

#include "simulator.h"

using gpunode::sim::GpuState;
using gpunode::sim::NodeState;
using gpunode::sim::Simulator;

namespace {

// Modes that differ from DEFAULT, by GPU UUID (the index when a profile gives none). Only read
// and written under the simulator's lock.
std::map<std::string, nvmlComputeMode_t>& ModesSet() {
  static auto* modes = new std::map<std::string, nvmlComputeMode_t>();
  return *modes;
}

std::string Key(const GpuState& gpu, size_t index) {
  return gpu.model().uuid ? *gpu.model().uuid : "#" + std::to_string(index);
}

template <typename Fn>
nvmlReturn_t OnPhysicalGpu(nvmlDevice_t device, Fn&& fn) {
  return Simulator::instance().with_node([&](NodeState& node) -> nvmlReturn_t {
    const nvmlDevice_st* handle = node.resolve(device);
    if (handle == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    GpuState& gpu = node.gpus()[handle->gpu];
    if (gpu.lost()) return NVML_ERROR_GPU_IS_LOST;
    if (handle->mig_position >= 0) return NVML_ERROR_NOT_SUPPORTED;
    return fn(Key(gpu, handle->gpu));
  });
}

}  // namespace

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t* mode) {
  return OnPhysicalGpu(device, [&](const std::string& key) -> nvmlReturn_t {
    if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    auto it = ModesSet().find(key);
    *mode = it == ModesSet().end() ? NVML_COMPUTEMODE_DEFAULT : it->second;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode) {
  return OnPhysicalGpu(device, [&](const std::string& key) -> nvmlReturn_t {
    if (mode < NVML_COMPUTEMODE_DEFAULT || mode > NVML_COMPUTEMODE_EXCLUSIVE_PROCESS) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (mode == NVML_COMPUTEMODE_DEFAULT) {
      ModesSet().erase(key);
    } else {
      ModesSet()[key] = mode;
    }
    return NVML_SUCCESS;
  });
}
