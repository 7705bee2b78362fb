#include "mig/mig_apply.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "nvml/status.h"

namespace gpunode::mig {
namespace {

std::string At(const nvml::MigPlacement& p) { return absl::StrCat(p.start, ":", p.size); }

// The compute instance profile that spans a GPU instance of `slices`.
absl::StatusOr<unsigned> WholeComputeProfile(const nvml::MigControl& control, nvmlGpuInstance_t gi,
                                             unsigned slices) {
  ASSIGN_OR_RETURN(std::vector<nvml::ComputeInstanceProfile> profiles,
                   control.ComputeInstanceProfiles(gi));
  for (const nvml::ComputeInstanceProfile& p : profiles)
    if (p.slices == slices) return p.id;
  return absl::NotFoundError(
      absl::StrCat("no compute instance profile of ", slices, " slices in the GPU instance"));
}

absl::Status DestroyAll(const nvml::MigControl& control, const GpuMigState& state) {
  for (const InstanceState& instance : state.instances) {
    for (const nvml::ComputeInstance& ci : instance.compute_instances)
      RETURN_IF_ERROR(control.DestroyComputeInstance(ci.handle));
    RETURN_IF_ERROR(control.DestroyGpuInstance(instance.gpu_instance.handle));
  }
  return absl::OkStatus();
}

// Puts GPU `before.index` back to `before`: whatever instances are there now go, the old ones
// come back at their placements with compute instances of their profiles, and the mode is reset.
absl::Status Restore(const nvml::Library& library, const GpuMigState& before) {
  ASSIGN_OR_RETURN(GpuMigState now, ReadGpuMigState(library, before.index));
  nvml::MigControl control(&library, before.handle);
  if (now.mode.current) RETURN_IF_ERROR(DestroyAll(control, now));
  if (before.mode.pending != now.mode.pending || before.mode.current != now.mode.current) {
    ASSIGN_OR_RETURN(nvmlReturn_t activation, control.SetMode(before.mode.current));
    (void)activation;
  }
  for (const InstanceState& instance : before.instances) {
    ASSIGN_OR_RETURN(nvml::GpuInstance gi,
                     control.CreateGpuInstance(instance.gpu_instance.profile_id,
                                               instance.gpu_instance.placement));
    for (const nvml::ComputeInstance& ci : instance.compute_instances)
      RETURN_IF_ERROR(control.CreateComputeInstance(gi.handle, ci.profile_id).status());
  }
  return absl::OkStatus();
}

// Applies one GPU's plan. Adds pending lines when the mode waits for a reset.
absl::Status ApplyGpu(const nvml::Library& library, GpuMigState state, GpuPlan plan,
                      ApplyResult& result) {
  nvml::MigControl control(&library, state.handle);
  std::string label = GpuLabel(state);
  if (plan.destroy_existing) {
    RETURN_IF_ERROR(DestroyAll(control, state));
    result.lines.push_back(
        absl::StrCat(label, ": destroyed ", state.instances.size(), " GPU instance(s)"));
    state.instances.clear();
  }
  if (plan.set_mode) {
    ASSIGN_OR_RETURN(nvmlReturn_t activation, control.SetMode(plan.enable));
    if (activation != NVML_SUCCESS) {
      result.pending.push_back(
          absl::StrCat(label, ": MIG mode ", plan.enable ? "enable" : "disable", " is pending (",
                       library.ErrorString(activation),
                       "); stop the processes on the GPU, reset it (nvidia-smi -r -i ", state.index,
                       ") or reboot, then apply again"));
      return absl::OkStatus();
    }
    result.lines.push_back(
        absl::StrCat(label, ": MIG mode ", plan.enable ? "enabled" : "disabled"));
  }
  for (const PlannedInstance& planned : plan.create) {
    ASSIGN_OR_RETURN(nvml::GpuInstance gi,
                     control.CreateGpuInstance(planned.profile_id, planned.placement));
    ASSIGN_OR_RETURN(unsigned ci_profile, WholeComputeProfile(control, gi.handle, planned.slices));
    RETURN_IF_ERROR(control.CreateComputeInstance(gi.handle, ci_profile).status());
    result.lines.push_back(absl::StrCat(label, ": created ", planned.profile, " at ",
                                        At(planned.placement), " (GPU instance ", gi.id, ")"));
  }
  return absl::OkStatus();
}

struct NodePlan {
  std::vector<GpuMigState> states;
  std::vector<GpuPlan> plans;
  std::vector<const MigConfigEntry*> entries;
};

absl::StatusOr<NodePlan> PlanNode(const nvml::Library& library, const MigConfigFile& file,
                                  const std::string& config_name) {
  NodePlan node;
  ASSIGN_OR_RETURN(node.states, ReadNodeMigState(library));
  for (const GpuMigState& state : node.states) {
    ASSIGN_OR_RETURN(const MigConfigEntry* entry, EntryFor(file, config_name, state));
    ASSIGN_OR_RETURN(GpuPlan plan, PlanGpu(state, entry));
    node.plans.push_back(std::move(plan));
    node.entries.push_back(entry);
  }
  return node;
}

}  // namespace

std::vector<std::string> DescribePlan(const GpuPlan& plan, const GpuMigState& state) {
  std::vector<std::string> lines;
  std::string label = GpuLabel(state);
  if (plan.destroy_existing)
    lines.push_back(absl::StrCat(label, ": destroy ", state.instances.size(), " GPU instance(s)"));
  if (plan.set_mode)
    lines.push_back(absl::StrCat(label, ": ", plan.enable ? "enable" : "disable", " MIG mode"));
  if (plan.placements_after_enable)
    lines.push_back(absl::StrCat(label,
                                 ": create the MIG devices once MIG is on (NVML lists a "
                                 "GPU's profiles only then)"));
  for (const PlannedInstance& p : plan.create)
    lines.push_back(absl::StrCat(label, ": create ", p.profile, " at ", At(p.placement)));
  return lines;
}

absl::StatusOr<ApplyResult> ApplyConfig(const nvml::Library& library, const MigConfigFile& file,
                                        const std::string& config_name,
                                        const ApplyOptions& options) {
  ASSIGN_OR_RETURN(NodePlan node, PlanNode(library, file, config_name));
  ApplyResult result;
  // Refuse before touching anything.
  std::vector<std::string> busy;
  for (size_t i = 0; i < node.plans.size(); ++i) {
    const GpuMigState& state = node.states[i];
    if (!node.plans[i].changes() || state.pids.empty()) continue;
    std::vector<std::string> pids;
    for (unsigned pid : state.pids) pids.push_back(absl::StrCat(pid));
    busy.push_back(absl::StrCat(GpuLabel(state), " is used by pid ", absl::StrJoin(pids, ", ")));
  }
  if (!busy.empty() && !options.force && !options.dry_run) {
    return absl::FailedPreconditionError(absl::StrCat(
        absl::StrJoin(busy, "; "),
        ": nothing changed; stop those processes (or pass --force to change the GPUs anyway)"));
  }
  for (size_t i = 0; i < node.plans.size(); ++i) {
    for (std::string& line : DescribePlan(node.plans[i], node.states[i]))
      result.lines.push_back(options.dry_run ? absl::StrCat("would ", line) : line);
  }
  if (options.dry_run) {
    for (const std::string& line : busy) result.lines.push_back(absl::StrCat("note: ", line));
    return result;
  }
  result.lines.clear();
  std::vector<size_t> touched;
  for (size_t i = 0; i < node.plans.size(); ++i) {
    GpuPlan plan = node.plans[i];
    if (!plan.changes()) continue;
    touched.push_back(i);
    size_t pending_before = result.pending.size();
    absl::Status st = ApplyGpu(library, node.states[i], plan, result);
    // Profiles are listed only while MIG is on: place them now, or undo the mode change.
    if (st.ok() && plan.placements_after_enable && result.pending.size() == pending_before) {
      absl::StatusOr<GpuMigState> now = ReadGpuMigState(library, node.states[i].index);
      if (!now.ok()) {
        st = now.status();
      } else {
        absl::StatusOr<GpuPlan> second = PlanGpu(*now, node.entries[i]);
        st = second.ok() ? ApplyGpu(library, *now, *second, result) : second.status();
      }
    }
    if (st.ok()) continue;
    std::vector<std::string> restored;
    for (auto it = touched.rbegin(); it != touched.rend(); ++it) {
      absl::Status undo = Restore(library, node.states[*it]);
      restored.push_back(
          undo.ok() ? absl::StrCat(GpuLabel(node.states[*it]), " restored")
                    : absl::StrCat(GpuLabel(node.states[*it]), " NOT restored: ", undo.message()));
    }
    return absl::Status(
        st.code(), absl::StrCat(st.message(), "; rolled back: ", absl::StrJoin(restored, ", ")));
  }
  result.changed = !touched.empty();
  return result;
}

absl::StatusOr<std::vector<std::string>> AssertConfig(const nvml::Library& library,
                                                      const MigConfigFile& file,
                                                      const std::string& config_name) {
  ASSIGN_OR_RETURN(std::vector<GpuMigState> states, ReadNodeMigState(library));
  std::vector<std::string> differences;
  for (const GpuMigState& state : states) {
    ASSIGN_OR_RETURN(const MigConfigEntry* entry, EntryFor(file, config_name, state));
    // A layout that cannot exist on a GPU is a difference there, not a failure to check.
    absl::StatusOr<GpuPlan> plan = PlanGpu(state, entry);
    if (!plan.ok()) {
      differences.emplace_back(plan.status().message());
      continue;
    }
    differences.insert(differences.end(), plan->differences.begin(), plan->differences.end());
  }
  return differences;
}

}  // namespace gpunode::mig
