#include "mig/gpu_mig_state.h"

#include "core/status_macros.h"
#include "nvml/status.h"
#include "nvml/system.h"

namespace gpunode::mig {

absl::Status ReadInstances(const nvml::Library& library, GpuMigState& state) {
  nvml::MigControl control(&library, state.handle);
  state.profiles.clear();
  state.instances.clear();
  ASSIGN_OR_RETURN(std::vector<nvml::GpuInstanceProfile> profiles, control.GpuInstanceProfiles());
  for (const nvml::GpuInstanceProfile& profile : profiles) {
    ASSIGN_OR_RETURN(std::vector<nvml::MigPlacement> placements,
                     control.PossiblePlacements(profile.id));
    ASSIGN_OR_RETURN(unsigned remaining, control.RemainingCapacity(profile.id));
    state.profiles.push_back(ProfileChoice{profile, std::move(placements), remaining});
  }
  ASSIGN_OR_RETURN(std::vector<nvml::GpuInstance> instances, control.GpuInstances(profiles));
  for (const nvml::GpuInstance& gi : instances) {
    InstanceState instance;
    instance.gpu_instance = gi;
    instance.profile = "?";
    for (const nvml::GpuInstanceProfile& profile : profiles) {
      if (profile.id != gi.profile_id) continue;
      instance.profile = profile.name;
      instance.slices = profile.slices;
    }
    ASSIGN_OR_RETURN(instance.compute_instances, control.ComputeInstances(gi.handle));
    state.instances.push_back(std::move(instance));
  }
  return absl::OkStatus();
}

absl::StatusOr<GpuMigState> ReadGpuMigState(const nvml::Library& library, unsigned index) {
  ASSIGN_OR_RETURN(nvml::Device device, nvml::DeviceAt(library, index));
  GpuMigState state;
  state.index = index;
  state.handle = device.handle();
  ASSIGN_OR_RETURN(state.name, device.Name());
  ASSIGN_OR_RETURN(nvml::PciInfo pci, device.Pci());
  state.pci_device_id = pci.pci_device_id;
  ASSIGN_OR_RETURN(std::vector<nvml::ProcessInfo> processes, device.ComputeProcesses());
  for (const nvml::ProcessInfo& p : processes) state.pids.push_back(p.pid);
  absl::StatusOr<nvml::MigMode> mode = nvml::MigControl(&library, state.handle).Mode();
  if (nvml::IsNotSupported(mode.status())) return state;
  if (!mode.ok()) return mode.status();
  state.capable = true;
  state.mode = *mode;
  if (state.mode.current) RETURN_IF_ERROR(ReadInstances(library, state));
  return state;
}

absl::StatusOr<std::vector<GpuMigState>> ReadNodeMigState(const nvml::Library& library) {
  ASSIGN_OR_RETURN(unsigned count, nvml::DeviceCount(library));
  std::vector<GpuMigState> gpus;
  for (unsigned i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(GpuMigState state, ReadGpuMigState(library, i));
    gpus.push_back(std::move(state));
  }
  return gpus;
}

const ProfileChoice* FindProfile(const GpuMigState& state, const std::string& name) {
  for (const ProfileChoice& choice : state.profiles)
    if (choice.profile.name == name) return &choice;
  return nullptr;
}

}  // namespace gpunode::mig
