// What a GPU's MIG partitioning is now, read through NVML: the mode, the profiles (while MIG is
// on), the GPU instances with their compute instances, and the processes using the GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nvml/library.h"
#include "nvml/mig.h"

namespace gpunode::mig {

struct ProfileChoice {
  nvml::GpuInstanceProfile profile;
  std::vector<nvml::MigPlacement> placements;  // every possible placement (-lgipp)
  unsigned remaining = 0;                      // instances that can still be created
};

struct InstanceState {
  nvml::GpuInstance gpu_instance;
  std::string profile;  // the GPU instance profile's name ("?" when no profile lists its id)
  unsigned slices = 0;
  std::vector<nvml::ComputeInstance> compute_instances;
};

struct GpuMigState {
  unsigned index = 0;
  nvmlDevice_t handle = nullptr;
  std::string name;
  uint32_t pci_device_id = 0;
  bool capable = false;  // nvmlDeviceGetMigMode answers
  nvml::MigMode mode;
  std::vector<ProfileChoice> profiles;  // empty while MIG is off
  std::vector<InstanceState> instances;
  std::vector<unsigned> pids;  // compute processes on the GPU or any of its MIG devices
};

absl::StatusOr<GpuMigState> ReadGpuMigState(const nvml::Library& library, unsigned index);
absl::StatusOr<std::vector<GpuMigState>> ReadNodeMigState(const nvml::Library& library);

// Fills `state.profiles` and `state.instances` (MIG must be on).
absl::Status ReadInstances(const nvml::Library& library, GpuMigState& state);

// The profile called `name` ("1g.10gb"), or null.
const ProfileChoice* FindProfile(const GpuMigState& state, const std::string& name);

}  // namespace gpunode::mig
