// The NVML MIG management entry points: modes, GPU instances and compute instances, with the
// profile tables and placement rules of sim/src/mig_profile_table.cc. Every change is saved to
// GPUNODE_SIM_STATE when it names a file.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#pragma GCC visibility push(default)
#include "nvml/abi.h"
#pragma GCC visibility pop

#include "mig_state_file.h"
#include "simulator.h"

using gpunode::sim::ComputeInstanceState;
using gpunode::sim::find_profile_by_id;
using gpunode::sim::find_profile_by_index;
using gpunode::sim::GpuInstanceProfile;
using gpunode::sim::GpuInstanceState;
using gpunode::sim::GpuState;
using gpunode::sim::MigLayout;
using gpunode::sim::NodeState;
using gpunode::sim::Simulator;

namespace {

// Runs fn(node, gpu index, layout) for a full GPU handle whose layout has a profile table and
// MIG mode on; NOT_SUPPORTED otherwise, as the driver answers on a GPU without MIG enabled.
template <typename Fn>
nvmlReturn_t on_mig_gpu(nvmlDevice_t device, Fn&& fn) {
  return Simulator::instance().with_node([&](NodeState& node) -> nvmlReturn_t {
    const nvmlDevice_st* handle = node.resolve(device);
    if (handle == nullptr || handle->mig_position >= 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (node.gpus()[handle->gpu].lost()) return NVML_ERROR_GPU_IS_LOST;
    MigLayout& layout = node.mig_layout(handle->gpu);
    if (layout.table() == nullptr || !layout.enabled()) return NVML_ERROR_NOT_SUPPORTED;
    return fn(node, handle->gpu, layout);
  });
}

template <typename Fn>
nvmlReturn_t on_gpu_instance(nvmlGpuInstance_t instance, Fn&& fn) {
  return Simulator::instance().with_node([&](NodeState& node) -> nvmlReturn_t {
    auto gpu = node.gpu_of(instance);
    if (!gpu) return NVML_ERROR_INVALID_ARGUMENT;
    if (node.gpus()[*gpu].lost()) return NVML_ERROR_GPU_IS_LOST;
    MigLayout& layout = node.mig_layout(*gpu);
    return fn(node, *gpu, layout, *layout.find(instance));
  });
}

// GPUNODE_SIM_MIG_FAIL_AT=N: the Nth MIG change of the process (counted from 1) fails with
// NVML_ERROR_UNKNOWN and changes nothing, to rehearse a failure half-way through a layout change;
// the changes before and after it work.
bool fail_this_change(NodeState& node) {
  const char* text = std::getenv("GPUNODE_SIM_MIG_FAIL_AT");
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  unsigned long failing = std::strtoul(text, &end, 10);
  if (end == text || *end != '\0') return false;
  return node.next_mig_change() == failing;
}

// Publishes a successful change to the GPU's devices and to the state file.
nvmlReturn_t changed(NodeState& node, unsigned gpu, nvmlReturn_t result) {
  if (result != NVML_SUCCESS) return result;
  node.publish_mig_layout(gpu);
  // A state file that cannot be written is the simulator's "operating system" failure.
  return gpunode::sim::save_mig_state(node) ? NVML_SUCCESS : NVML_ERROR_OPERATING_SYSTEM;
}

void copy_name(char (&out)[NVML_DEVICE_NAME_V2_BUFFER_SIZE], const std::string& name) {
  std::snprintf(out, sizeof out, "%s", name.c_str());
}

nvmlGpuInstanceProfileInfo_v2_t gpu_profile_info(const GpuInstanceProfile& p) {
  nvmlGpuInstanceProfileInfo_v2_t info{};
  info.version = kNvmlGpuInstanceProfileInfoV2Version;
  info.id = p.id;
  info.isP2pSupported = 0;
  info.sliceCount = p.compute_slices;
  info.instanceCount = p.instances;
  info.multiprocessorCount = p.multiprocessors;
  info.copyEngineCount = p.copy_engines;
  info.decoderCount = p.decoders;
  info.encoderCount = p.encoders;
  info.jpegCount = p.jpegs;
  info.ofaCount = p.ofas;
  info.memorySizeMB = p.memory_mib;
  copy_name(info.name, "MIG " + std::string(p.name));
  return info;
}

nvmlReturn_t gpu_profile(nvmlDevice_t device, unsigned profile,
                         nvmlGpuInstanceProfileInfo_v2_t* info) {
  return on_mig_gpu(device, [&](NodeState&, unsigned, MigLayout& layout) -> nvmlReturn_t {
    if (profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    const GpuInstanceProfile* p = find_profile_by_index(*layout.table(), profile);
    if (p == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *info = gpu_profile_info(*p);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t compute_profile(nvmlGpuInstance_t instance, unsigned profile, unsigned engine_profile,
                             nvmlComputeInstanceProfileInfo_v2_t* info) {
  return on_gpu_instance(
      instance, [&](NodeState&, unsigned, MigLayout&, GpuInstanceState& gi) -> nvmlReturn_t {
        if (profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
            engine_profile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED) {
          return NVML_ERROR_INVALID_ARGUMENT;
        }
        auto slices = gpunode::sim::compute_profile_slices(profile);
        const GpuInstanceProfile& p = *gi.profile;
        if (!slices || *slices > p.compute_slices) return NVML_ERROR_NOT_SUPPORTED;
        *info = nvmlComputeInstanceProfileInfo_v2_t{};
        info->version = kNvmlComputeInstanceProfileInfoV2Version;
        info->id = profile;
        info->sliceCount = *slices;
        info->instanceCount = p.compute_slices / *slices;
        info->multiprocessorCount = p.multiprocessors * *slices / p.compute_slices;
        info->sharedCopyEngineCount = p.copy_engines;
        info->sharedDecoderCount = p.decoders;
        info->sharedEncoderCount = p.encoders;
        info->sharedJpegCount = p.jpegs;
        info->sharedOfaCount = p.ofas;
        std::string name = *slices < p.compute_slices
                               ? std::to_string(*slices) + "c." + std::string(p.name)
                               : std::string(p.name);
        copy_name(info->name, "MIG " + name);
        return NVML_SUCCESS;
      });
}

nvmlReturn_t create_gpu_instance(nvmlDevice_t device, unsigned profile_id,
                                 const nvmlGpuInstancePlacement_t* placement,
                                 nvmlGpuInstance_t* instance) {
  return on_mig_gpu(device, [&](NodeState& node, unsigned gpu, MigLayout& layout) -> nvmlReturn_t {
    const GpuInstanceProfile* p = find_profile_by_id(*layout.table(), profile_id);
    if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::optional<unsigned> start;
    if (placement != nullptr) {
      if (placement->size != p->placement_size) return NVML_ERROR_INVALID_ARGUMENT;
      start = placement->start;
    }
    if (fail_this_change(node)) return NVML_ERROR_UNKNOWN;
    return changed(node, gpu, layout.create_gpu_instance(*p, start, instance));
  });
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                  nvmlReturn_t* activationStatus) {
  return Simulator::instance().with_node([&](NodeState& node) -> nvmlReturn_t {
    const nvmlDevice_st* handle = node.resolve(device);
    if (handle == nullptr || handle->mig_position >= 0 || activationStatus == nullptr ||
        (mode != NVML_DEVICE_MIG_ENABLE && mode != NVML_DEVICE_MIG_DISABLE)) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    GpuState& gpu = node.gpus()[handle->gpu];
    if (gpu.lost()) return NVML_ERROR_GPU_IS_LOST;
    MigLayout& layout = node.mig_layout(handle->gpu);
    if (fail_this_change(node)) return NVML_ERROR_UNKNOWN;
    return changed(node, handle->gpu,
                   layout.set_mode(mode == NVML_DEVICE_MIG_ENABLE, gpu.model(), activationStatus));
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t* info) {
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlGpuInstanceProfileInfo_v2_t v2{};
  nvmlReturn_t result = gpu_profile(device, profile, &v2);
  if (result == NVML_SUCCESS) {
    *info = nvmlGpuInstanceProfileInfo_t{v2.id,
                                         v2.isP2pSupported,
                                         v2.sliceCount,
                                         v2.instanceCount,
                                         v2.multiprocessorCount,
                                         v2.copyEngineCount,
                                         v2.decoderCount,
                                         v2.encoderCount,
                                         v2.jpegCount,
                                         v2.ofaCount,
                                         v2.memorySizeMB};
  }
  return result;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t* info) {
  if (info == nullptr || info->version != kNvmlGpuInstanceProfileInfoV2Version)
    return NVML_ERROR_INVALID_ARGUMENT;
  return gpu_profile(device, profile, info);
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device,
                                                           unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t* placements,
                                                           unsigned int* count) {
  return on_mig_gpu(device, [&](NodeState&, unsigned, MigLayout& layout) -> nvmlReturn_t {
    const GpuInstanceProfile* p = find_profile_by_id(*layout.table(), profileId);
    if (p == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // As the driver: a null array asks for the count; otherwise every placement of the profile.
    auto needed = static_cast<unsigned>(p->placement_starts.size());
    if (placements == nullptr) {
      *count = needed;
      return NVML_SUCCESS;
    }
    if (*count < needed) {
      *count = needed;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < needed; ++i)
      placements[i] = nvmlGpuInstancePlacement_t{p->placement_starts[i], p->placement_size};
    *count = needed;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profileId,
                                                       unsigned int* count) {
  return on_mig_gpu(device, [&](NodeState&, unsigned, MigLayout& layout) -> nvmlReturn_t {
    const GpuInstanceProfile* p = find_profile_by_id(*layout.table(), profileId);
    if (p == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // Count greedily: instances placed one after another at their first free placement.
    unsigned n = 0;
    std::vector<unsigned> taken;
    for (unsigned start : p->placement_starts) {
      bool overlaps_taken = std::any_of(taken.begin(), taken.end(), [&](unsigned t) {
        return start < t + p->placement_size && t < start + p->placement_size;
      });
      if (overlaps_taken) continue;
      auto free = layout.free_starts(*p);
      if (std::find(free.begin(), free.end(), start) == free.end()) continue;
      taken.push_back(start);
      ++n;
    }
    unsigned existing = 0;
    unsigned compute_used = 0;
    for (const GpuInstanceState& gi : layout.gpu_instances()) {
      if (gi.profile == p) ++existing;
      compute_used += gi.profile->compute_slices;
    }
    unsigned by_count = p->instances > existing ? p->instances - existing : 0;
    unsigned compute_left =
        layout.table()->compute_slices - std::min(compute_used, layout.table()->compute_slices);
    *count = std::min({n, by_count, compute_left / p->compute_slices});
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                         nvmlGpuInstance_t* gpuInstance) {
  return create_gpu_instance(device, profileId, nullptr, gpuInstance);
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t* placement,
                                                      nvmlGpuInstance_t* gpuInstance) {
  if (placement == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return create_gpu_instance(device, profileId, placement, gpuInstance);
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
  return on_gpu_instance(
      gpuInstance,
      [&](NodeState& node, unsigned gpu, MigLayout& layout, GpuInstanceState&) -> nvmlReturn_t {
        if (fail_this_change(node)) return NVML_ERROR_UNKNOWN;
        return changed(node, gpu,
                       layout.destroy_gpu_instance(gpuInstance, node.gpus()[gpu].model()));
      });
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                       nvmlGpuInstance_t* gpuInstances, unsigned int* count) {
  return on_mig_gpu(device, [&](NodeState&, unsigned, MigLayout& layout) -> nvmlReturn_t {
    const GpuInstanceProfile* p = find_profile_by_id(*layout.table(), profileId);
    if (p == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::vector<nvmlGpuInstance_t> found;
    for (const GpuInstanceState& gi : layout.gpu_instances())
      if (gi.profile == p) found.push_back(gi.handle.get());
    // The buffer must hold the profile's instance count, as the header says.
    if (gpuInstances == nullptr && !found.empty()) return NVML_ERROR_INVALID_ARGUMENT;
    if (*count < found.size()) {
      *count = static_cast<unsigned>(found.size());
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    std::copy(found.begin(), found.end(), gpuInstances);
    *count = static_cast<unsigned>(found.size());
    return NVML_SUCCESS;
  });
}

// NVIDIA's device plugin and GFD reach a MIG device's instances by id (go-nvlib's MIG profile of a
// device), not by listing them.
nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                          nvmlGpuInstance_t* gpuInstance) {
  return on_mig_gpu(device, [&](NodeState&, unsigned, MigLayout& layout) -> nvmlReturn_t {
    if (gpuInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    for (const GpuInstanceState& gi : layout.gpu_instances()) {
      if (gi.id != id) continue;
      *gpuInstance = gi.handle.get();
      return NVML_SUCCESS;
    }
    return NVML_ERROR_NOT_FOUND;
  });
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info) {
  return on_gpu_instance(
      gpuInstance,
      [&](NodeState& node, unsigned gpu, MigLayout&, GpuInstanceState& gi) -> nvmlReturn_t {
        if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        *info = nvmlGpuInstanceInfo_t{
            node.gpu_handle(gpu), gi.id, gi.profile->id, {gi.start, gi.profile->placement_size}};
        return NVML_SUCCESS;
      });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance,
                                                          unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t* info) {
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlComputeInstanceProfileInfo_v2_t v2{};
  nvmlReturn_t result = compute_profile(gpuInstance, profile, engProfile, &v2);
  if (result == NVML_SUCCESS) {
    *info = nvmlComputeInstanceProfileInfo_t{v2.id,
                                             v2.sliceCount,
                                             v2.instanceCount,
                                             v2.multiprocessorCount,
                                             v2.sharedCopyEngineCount,
                                             v2.sharedDecoderCount,
                                             v2.sharedEncoderCount,
                                             v2.sharedJpegCount,
                                             v2.sharedOfaCount};
  }
  return result;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(
    nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_v2_t* info) {
  if (info == nullptr || info->version != kNvmlComputeInstanceProfileInfoV2Version)
    return NVML_ERROR_INVALID_ARGUMENT;
  return compute_profile(gpuInstance, profile, engProfile, info);
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                                  unsigned int profileId,
                                                  nvmlComputeInstance_t* computeInstance) {
  return on_gpu_instance(
      gpuInstance,
      [&](NodeState& node, unsigned gpu, MigLayout& layout, GpuInstanceState& gi) -> nvmlReturn_t {
        if (fail_this_change(node)) return NVML_ERROR_UNKNOWN;
        return changed(node, gpu, layout.create_compute_instance(gi, profileId, computeInstance));
      });
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
  return Simulator::instance().with_node([&](NodeState& node) -> nvmlReturn_t {
    auto gpu = node.gpu_of(computeInstance);
    if (!gpu) return NVML_ERROR_INVALID_ARGUMENT;
    if (node.gpus()[*gpu].lost()) return NVML_ERROR_GPU_IS_LOST;
    MigLayout& layout = node.mig_layout(*gpu);
    if (fail_this_change(node)) return NVML_ERROR_UNKNOWN;
    return changed(node, *gpu,
                   layout.destroy_compute_instance(computeInstance, node.gpus()[*gpu].model()));
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                unsigned int profileId,
                                                nvmlComputeInstance_t* computeInstances,
                                                unsigned int* count) {
  return on_gpu_instance(
      gpuInstance, [&](NodeState&, unsigned, MigLayout&, GpuInstanceState& gi) -> nvmlReturn_t {
        if (count == nullptr || profileId >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
          return NVML_ERROR_INVALID_ARGUMENT;
        std::vector<nvmlComputeInstance_t> found;
        for (const ComputeInstanceState& ci : gi.compute_instances)
          if (ci.profile_index == profileId) found.push_back(ci.handle.get());
        if (computeInstances == nullptr && !found.empty()) return NVML_ERROR_INVALID_ARGUMENT;
        if (*count < found.size()) {
          *count = static_cast<unsigned>(found.size());
          return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        std::copy(found.begin(), found.end(), computeInstances);
        *count = static_cast<unsigned>(found.size());
        return NVML_SUCCESS;
      });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                   nvmlComputeInstance_t* computeInstance) {
  return on_gpu_instance(
      gpuInstance, [&](NodeState&, unsigned, MigLayout&, GpuInstanceState& gi) -> nvmlReturn_t {
        if (computeInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        for (const ComputeInstanceState& ci : gi.compute_instances) {
          if (ci.id != id) continue;
          *computeInstance = ci.handle.get();
          return NVML_SUCCESS;
        }
        return NVML_ERROR_NOT_FOUND;
      });
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                           nvmlComputeInstanceInfo_t* info) {
  return Simulator::instance().with_node([&](NodeState& node) -> nvmlReturn_t {
    auto gpu = node.gpu_of(computeInstance);
    if (!gpu || info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    GpuInstanceState* gi = nullptr;
    ComputeInstanceState* ci = nullptr;
    node.mig_layout(*gpu).find(computeInstance, &gi, &ci);
    *info = nvmlComputeInstanceInfo_t{node.gpu_handle(*gpu),
                                      gi->handle.get(),
                                      ci->id,
                                      ci->profile_index,
                                      {ci->start, ci->slices}};
    return NVML_SUCCESS;
  });
}

}  // extern "C"
