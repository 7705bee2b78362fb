// An NVML device handle resolved under the simulator's lock, for every file of exported calls.
#pragma once

#include "simulator.h"

namespace gpunode::sim {

// Runs fn(node, gpu, gpu_index, mig) for `device` under the simulator's lock; mig is null for a
// full GPU. An unknown handle is INVALID_ARGUMENT; every call on a lost GPU, or on a MIG device of
// one, is GPU_IS_LOST, as the driver answers.
template <typename Fn>
nvmlReturn_t with_device(nvmlDevice_t device, Fn&& fn) {
  return Simulator::instance().with_node([&](NodeState& node) -> nvmlReturn_t {
    const nvmlDevice_st* handle = node.resolve(device);
    if (handle == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    GpuState& gpu = node.gpus()[handle->gpu];
    if (gpu.lost()) return NVML_ERROR_GPU_IS_LOST;
    const MigDevice* mig =
        handle->mig_position < 0 ? nullptr : &gpu.model().mig_devices[handle->mig_position];
    return fn(node, gpu, handle->gpu, mig);
  });
}

}  // namespace gpunode::sim
