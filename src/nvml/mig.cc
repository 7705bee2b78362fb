#include "nvml/mig.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "core/status_macros.h"
#include "nvml/library.h"
#include "nvml/status.h"

namespace gpunode::nvml {
namespace {

// NVML names profiles "MIG 1g.10gb"; gpunode, mig-parted and the device plugin say "1g.10gb".
std::string ProfileName(const char* name, size_t size) {
  std::string text(name, strnlen(name, size));
  if (absl::StartsWith(text, "MIG ")) text.erase(0, 4);
  return text;
}

}  // namespace

absl::StatusOr<MigMode> MigControl::Mode() const {
  unsigned current = 0, pending = 0;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_mig_mode, device_, &current, &pending));
  return MigMode{current == NVML_DEVICE_MIG_ENABLE, pending == NVML_DEVICE_MIG_ENABLE};
}

absl::StatusOr<nvmlReturn_t> MigControl::SetMode(bool enable) const {
  nvmlReturn_t activation = NVML_SUCCESS;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_set_mig_mode, device_,
                                    enable ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE,
                                    &activation));
  return activation;
}

absl::StatusOr<std::vector<GpuInstanceProfile>> MigControl::GpuInstanceProfiles() const {
  std::vector<GpuInstanceProfile> out;
  for (unsigned index = 0; index < NVML_GPU_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlGpuInstanceProfileInfo_v2_t info{};
    info.version = kNvmlGpuInstanceProfileInfoV2Version;
    absl::Status st =
        GPUNODE_NVML_CALL(*library_, device_get_gpu_instance_profile_info_v, device_, index, &info);
    // Indexes a GPU does not have are NOT_SUPPORTED; an older driver knows fewer indexes.
    if (IsNotSupported(st) || ReturnOf(st) == NVML_ERROR_INVALID_ARGUMENT) {
      if (index == 0 && IsNotSupported(st)) return st;  // MIG off, or no MIG at all
      continue;
    }
    RETURN_IF_ERROR(st);
    out.push_back(GpuInstanceProfile{index, info.id, ProfileName(info.name, sizeof info.name),
                                     info.sliceCount, info.instanceCount, info.memorySizeMB,
                                     info.multiprocessorCount, info.copyEngineCount,
                                     info.decoderCount, info.encoderCount, info.jpegCount,
                                     info.ofaCount, info.isP2pSupported != 0});
  }
  return out;
}

absl::StatusOr<std::vector<MigPlacement>> MigControl::PossiblePlacements(
    unsigned profile_id) const {
  unsigned count = 0;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_gpu_instance_possible_placements, device_,
                                    profile_id, nullptr, &count));
  std::vector<nvmlGpuInstancePlacement_t> raw(count);
  if (count > 0) {
    RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_gpu_instance_possible_placements,
                                      device_, profile_id, raw.data(), &count));
  }
  std::vector<MigPlacement> out;
  for (unsigned i = 0; i < count && i < raw.size(); ++i)
    out.push_back(MigPlacement{raw[i].start, raw[i].size});
  return out;
}

absl::StatusOr<unsigned> MigControl::RemainingCapacity(unsigned profile_id) const {
  unsigned count = 0;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_gpu_instance_remaining_capacity, device_,
                                    profile_id, &count));
  return count;
}

absl::StatusOr<std::vector<GpuInstance>> MigControl::GpuInstances(
    const std::vector<GpuInstanceProfile>& profiles) const {
  std::vector<GpuInstance> out;
  for (const GpuInstanceProfile& profile : profiles) {
    std::vector<nvmlGpuInstance_t> handles(std::max(1u, profile.instances));
    auto count = static_cast<unsigned>(handles.size());
    RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_get_gpu_instances, device_, profile.id,
                                      handles.data(), &count));
    for (unsigned i = 0; i < count && i < handles.size(); ++i) {
      nvmlGpuInstanceInfo_t info{};
      RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, gpu_instance_get_info, handles[i], &info));
      out.push_back(GpuInstance{handles[i], info.id, info.profileId,
                                MigPlacement{info.placement.start, info.placement.size}});
    }
  }
  return out;
}

absl::StatusOr<GpuInstance> MigControl::CreateGpuInstance(unsigned profile_id,
                                                          MigPlacement placement) const {
  nvmlGpuInstancePlacement_t raw{placement.start, placement.size};
  nvmlGpuInstance_t handle = nullptr;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, device_create_gpu_instance_with_placement, device_,
                                    profile_id, &raw, &handle));
  nvmlGpuInstanceInfo_t info{};
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, gpu_instance_get_info, handle, &info));
  return GpuInstance{handle, info.id, info.profileId,
                     MigPlacement{info.placement.start, info.placement.size}};
}

absl::Status MigControl::DestroyGpuInstance(nvmlGpuInstance_t instance) const {
  return GPUNODE_NVML_CALL(*library_, gpu_instance_destroy, instance);
}

absl::StatusOr<std::vector<ComputeInstanceProfile>> MigControl::ComputeInstanceProfiles(
    nvmlGpuInstance_t instance) const {
  std::vector<ComputeInstanceProfile> out;
  for (unsigned index = 0; index < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlComputeInstanceProfileInfo_v2_t info{};
    info.version = kNvmlComputeInstanceProfileInfoV2Version;
    absl::Status st =
        GPUNODE_NVML_CALL(*library_, gpu_instance_get_compute_instance_profile_info_v, instance,
                          index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (IsNotSupported(st) || ReturnOf(st) == NVML_ERROR_INVALID_ARGUMENT) continue;
    RETURN_IF_ERROR(st);
    out.push_back(ComputeInstanceProfile{info.id, ProfileName(info.name, sizeof info.name),
                                         info.sliceCount, info.instanceCount,
                                         info.multiprocessorCount});
  }
  return out;
}

absl::StatusOr<std::vector<ComputeInstance>> MigControl::ComputeInstances(
    nvmlGpuInstance_t instance) const {
  std::vector<ComputeInstance> out;
  ASSIGN_OR_RETURN(std::vector<ComputeInstanceProfile> profiles, ComputeInstanceProfiles(instance));
  for (const ComputeInstanceProfile& profile : profiles) {
    std::vector<nvmlComputeInstance_t> handles(std::max(1u, profile.instances));
    auto count = static_cast<unsigned>(handles.size());
    RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, gpu_instance_get_compute_instances, instance,
                                      profile.id, handles.data(), &count));
    for (unsigned i = 0; i < count && i < handles.size(); ++i) {
      nvmlComputeInstanceInfo_t info{};
      RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, compute_instance_get_info, handles[i], &info));
      out.push_back(ComputeInstance{handles[i], info.id, info.profileId,
                                    MigPlacement{info.placement.start, info.placement.size}});
    }
  }
  return out;
}

absl::StatusOr<ComputeInstance> MigControl::CreateComputeInstance(nvmlGpuInstance_t instance,
                                                                  unsigned profile_id) const {
  nvmlComputeInstance_t handle = nullptr;
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, gpu_instance_create_compute_instance, instance,
                                    profile_id, &handle));
  nvmlComputeInstanceInfo_t info{};
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(*library_, compute_instance_get_info, handle, &info));
  return ComputeInstance{handle, info.id, info.profileId,
                         MigPlacement{info.placement.start, info.placement.size}};
}

absl::Status MigControl::DestroyComputeInstance(nvmlComputeInstance_t instance) const {
  return GPUNODE_NVML_CALL(*library_, compute_instance_destroy, instance);
}

}  // namespace gpunode::nvml
