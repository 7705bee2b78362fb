// Typed MIG management of one physical GPU: its mode, its GPU instance profiles and their
// placements, and its GPU and compute instances — what `nvidia-smi mig` and mig-parted do,
// through the entry points of nvml/entry_points.h.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nvml/abi.h"

namespace gpunode::nvml {

class Library;

struct MigMode {
  bool current = false;
  bool pending = false;
};

struct MigPlacement {
  unsigned start = 0;
  unsigned size = 0;
  bool operator==(const MigPlacement&) const = default;
};

// A GPU instance profile as `nvidia-smi mig -lgip` lists it.
struct GpuInstanceProfile {
  unsigned index = 0;  // NVML_GPU_INSTANCE_PROFILE_*
  unsigned id = 0;
  std::string name;  // "1g.10gb", without NVML's "MIG " prefix
  unsigned slices = 0;
  unsigned instances = 0;  // on an empty GPU
  uint64_t memory_mib = 0;
  unsigned multiprocessors = 0;
  unsigned copy_engines = 0;
  unsigned decoders = 0;
  unsigned encoders = 0;
  unsigned jpegs = 0;
  unsigned ofas = 0;
  bool p2p = false;
};

struct ComputeInstanceProfile {
  unsigned id = 0;  // NVML_COMPUTE_INSTANCE_PROFILE_*
  std::string name;
  unsigned slices = 0;
  unsigned instances = 0;
  unsigned multiprocessors = 0;
};

struct ComputeInstance {
  nvmlComputeInstance_t handle = nullptr;
  unsigned id = 0;
  unsigned profile_id = 0;
  MigPlacement placement;
};

struct GpuInstance {
  nvmlGpuInstance_t handle = nullptr;
  unsigned id = 0;
  unsigned profile_id = 0;
  MigPlacement placement;
};

class MigControl {
 public:
  MigControl(const Library* library, nvmlDevice_t device) : library_(library), device_(device) {}

  absl::StatusOr<MigMode> Mode() const;
  // nvmlDeviceSetMigMode; returns the activation status (NVML_SUCCESS when the mode is active,
  // e.g. NVML_ERROR_IN_USE when it stays pending until the GPU is idle and reset).
  absl::StatusOr<nvmlReturn_t> SetMode(bool enable) const;

  // The GPU instance profiles the GPU supports (MIG mode must be on), in profile index order.
  absl::StatusOr<std::vector<GpuInstanceProfile>> GpuInstanceProfiles() const;
  absl::StatusOr<std::vector<MigPlacement>> PossiblePlacements(unsigned profile_id) const;
  absl::StatusOr<unsigned> RemainingCapacity(unsigned profile_id) const;

  // Every GPU instance, for the profiles given.
  absl::StatusOr<std::vector<GpuInstance>> GpuInstances(
      const std::vector<GpuInstanceProfile>& profiles) const;
  absl::StatusOr<GpuInstance> CreateGpuInstance(unsigned profile_id, MigPlacement placement) const;
  absl::Status DestroyGpuInstance(nvmlGpuInstance_t instance) const;

  absl::StatusOr<std::vector<ComputeInstanceProfile>> ComputeInstanceProfiles(
      nvmlGpuInstance_t instance) const;
  absl::StatusOr<std::vector<ComputeInstance>> ComputeInstances(nvmlGpuInstance_t instance) const;
  absl::StatusOr<ComputeInstance> CreateComputeInstance(nvmlGpuInstance_t instance,
                                                        unsigned profile_id) const;
  absl::Status DestroyComputeInstance(nvmlComputeInstance_t instance) const;

 private:
  const Library* library_;
  nvmlDevice_t device_;
};

}  // namespace gpunode::nvml
