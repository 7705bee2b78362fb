// The plan that takes one GPU from its MIG partitioning to the one a config entry asks for:
// which mode to set, whether the instances there go, and which GPU instances to create where.
// Pure: it reads a GpuMigState and decides; mig_apply carries it out.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mig/gpu_mig_state.h"
#include "mig/mig_config.h"

namespace gpunode::mig {

struct PlannedInstance {
  std::string profile;
  unsigned profile_id = 0;
  unsigned slices = 0;
  nvml::MigPlacement placement;
};

struct GpuPlan {
  unsigned index = 0;
  std::string name;
  bool matched = false;  // a config entry names this GPU
  bool enable = false;   // the mode asked for
  bool set_mode = false;
  bool destroy_existing = false;
  std::vector<PlannedInstance> create;
  // MIG is off now, so NVML lists no profiles: placements are chosen once it is on.
  bool placements_after_enable = false;
  std::vector<std::string> differences;  // what is not as asked, one line each
  bool changes() const { return set_mode || destroy_existing || !create.empty(); }
};

// The entry of config `name` that applies to GPU `state` (the first that matches), or null.
// InvalidArgument when the file has no such config.
absl::StatusOr<const MigConfigEntry*> EntryFor(const MigConfigFile& file, const std::string& name,
                                               const GpuMigState& state);

// Plans GPU `state` for `entry` (null: leave the GPU alone). InvalidArgument, naming the GPU and
// the profile, when the layout cannot exist on the GPU (unknown profile, no room).
absl::StatusOr<GpuPlan> PlanGpu(const GpuMigState& state, const MigConfigEntry* entry);

// Chooses placements for `wanted` (profile name -> count) among the profiles of `state` on an
// empty GPU. InvalidArgument naming the GPU and the profile that finds no room.
absl::StatusOr<std::vector<PlannedInstance>> PlacePlan(
    const GpuMigState& state, const std::vector<std::pair<std::string, unsigned>>& wanted);

// "GPU 0 (NVIDIA A100-SXM4-80GB)"
std::string GpuLabel(const GpuMigState& state);

}  // namespace gpunode::mig
