// One GPU's MIG management state: the current and pending mode, and the GPU instances and
// compute instances with their placements, changed the way the driver changes them. The MIG
// devices NVML reports (GpuModel::mig_devices) are derived from it (mig_devices()).
//
// Not thread-safe: the Simulator calls it with its mutex held.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "mig_profile_table.h"
#include "node_model.h"

// What nvmlGpuInstance_t and nvmlComputeInstance_t point to. A handle stays allocated after its
// instance is destroyed (MigLayout keeps it) so that a stale handle never names a new instance.
struct nvmlGpuInstance_st {
  unsigned gpu;
  unsigned id;
};
struct nvmlComputeInstance_st {
  unsigned gpu;
  unsigned gpu_instance_id;
  unsigned id;
};

namespace gpunode::sim {

struct ComputeInstanceState {
  unsigned id = 0;
  unsigned profile_index = 0;  // NVML_COMPUTE_INSTANCE_PROFILE_*, also the profile id
  unsigned start = 0;          // compute slice within the GPU instance
  unsigned slices = 0;
  std::unique_ptr<nvmlComputeInstance_st> handle;
};

struct GpuInstanceState {
  unsigned id = 0;
  const GpuInstanceProfile* profile = nullptr;
  unsigned start = 0;  // memory slice
  std::vector<ComputeInstanceState> compute_instances;
  std::unique_ptr<nvmlGpuInstance_st> handle;
};

class MigLayout {
 public:
  // The layout of GPU `gpu` as its model describes it: mode, and GPU instances rebuilt from the
  // MIG devices (placements follow from the instance ids). table() is null for a GPU without a
  // profile table; it keeps its devices but cannot be changed.
  MigLayout(unsigned gpu, const GpuModel& model);

  const MigProductTable* table() const { return table_; }
  bool capable() const { return capable_; }
  bool enabled() const { return enabled_; }
  bool pending() const { return pending_; }
  const std::vector<GpuInstanceState>& gpu_instances() const { return gpu_instances_; }

  // nvmlDeviceSetMigMode. The mode becomes pending; it is activated at once unless processes use
  // the GPU, in which case `activation` is IN_USE and the mode stays pending until a later call
  // finds the GPU idle (the driver's "idle the device and retry"). Disabling while GPU instances
  // exist is IN_USE and changes nothing.
  nvmlReturn_t set_mode(bool enable, const GpuModel& model, nvmlReturn_t* activation);

  // Starts of `profile`'s placements that overlap no GPU instance and leave room in compute
  // slices and in the profile's instance count.
  std::vector<unsigned> free_starts(const GpuInstanceProfile& profile) const;

  // Creates a GPU instance at `start` (nullopt: the first free placement).
  nvmlReturn_t create_gpu_instance(const GpuInstanceProfile& profile, std::optional<unsigned> start,
                                   nvmlGpuInstance_t* handle);
  // IN_USE while compute instances or processes are in it.
  nvmlReturn_t destroy_gpu_instance(nvmlGpuInstance_t handle, const GpuModel& model);

  GpuInstanceState* find(nvmlGpuInstance_t handle);
  // The GPU instance and compute instance `handle` names; false when it is not a live instance.
  bool find(nvmlComputeInstance_t handle, GpuInstanceState** gi, ComputeInstanceState** ci);

  nvmlReturn_t create_compute_instance(GpuInstanceState& gi, unsigned profile_index,
                                       nvmlComputeInstance_t* handle);
  // IN_USE while processes run in it.
  nvmlReturn_t destroy_compute_instance(nvmlComputeInstance_t handle, const GpuModel& model);

  // Replaces mode and instances (a saved state); false when an instance does not fit the table.
  bool restore(bool enabled, bool pending, std::vector<GpuInstanceState> instances);

  // The MIG devices NVML reports: one per compute instance, in GPU instance id order.
  std::vector<MigDevice> mig_devices(const GpuModel& model) const;

 private:
  bool fits(const GpuInstanceProfile& profile, unsigned start) const;
  std::optional<unsigned> free_compute_start(const GpuInstanceState& gi, unsigned slices) const;

  unsigned gpu_;
  const MigProductTable* table_;
  bool capable_;
  bool enabled_;
  bool pending_;
  std::vector<GpuInstanceState> gpu_instances_;  // sorted by id
  std::vector<std::unique_ptr<nvmlGpuInstance_st>> retired_gpu_instances_;
  std::vector<std::unique_ptr<nvmlComputeInstance_st>> retired_compute_instances_;
};

}  // namespace gpunode::sim
