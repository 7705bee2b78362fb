#include "mig/mig_plan.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpunode::mig {
namespace {

// The layout as profile name -> count, for comparing with what is asked.
std::map<std::string, unsigned> CurrentCounts(const GpuMigState& state) {
  std::map<std::string, unsigned> counts;
  for (const InstanceState& instance : state.instances) ++counts[instance.profile];
  return counts;
}

std::string Describe(const std::map<std::string, unsigned>& counts) {
  if (counts.empty()) return "no MIG devices";
  std::vector<std::string> parts;
  for (const auto& [profile, count] : counts) parts.push_back(absl::StrCat(count, "x ", profile));
  return absl::StrJoin(parts, " + ");
}

// Each GPU instance holds exactly one compute instance that spans it (what mig-parted makes of
// a "<g>g.<mem>gb" device).
bool WholeComputeInstances(const GpuMigState& state) {
  for (const InstanceState& instance : state.instances) {
    if (instance.compute_instances.size() != 1 ||
        instance.compute_instances[0].placement.size != instance.slices) {
      return false;
    }
  }
  return true;
}

struct Search {
  const std::vector<const ProfileChoice*>& items;
  unsigned compute_slices;  // of the whole GPU
  std::vector<nvml::MigPlacement> chosen;
  size_t deepest = 0;

  bool Overlaps(const nvml::MigPlacement& p) const {
    for (const nvml::MigPlacement& c : chosen)
      if (p.start < c.start + c.size && c.start < p.start + p.size) return true;
    return false;
  }

  bool Place(size_t i, unsigned compute_used) {
    deepest = std::max(deepest, i);
    if (i == items.size()) return true;
    const ProfileChoice& choice = *items[i];
    if (compute_used + choice.profile.slices > compute_slices) return false;
    for (const nvml::MigPlacement& p : choice.placements) {
      if (Overlaps(p)) continue;
      chosen.push_back(p);
      if (Place(i + 1, compute_used + choice.profile.slices)) return true;
      chosen.pop_back();
    }
    return false;
  }
};

}  // namespace

std::string GpuLabel(const GpuMigState& state) {
  return absl::StrCat("GPU ", state.index, " (", state.name, ")");
}

absl::StatusOr<const MigConfigEntry*> EntryFor(const MigConfigFile& file, const std::string& name,
                                               const GpuMigState& state) {
  auto it = file.configs.find(name);
  if (it == file.configs.end()) {
    std::vector<std::string> names;
    for (const auto& [known, entries] : file.configs) names.push_back(known);
    return absl::InvalidArgumentError(
        absl::StrCat(file.path, ": no config \"", name,
                     "\" in mig-configs; known: ", absl::StrJoin(names, ", ")));
  }
  for (const MigConfigEntry& entry : it->second)
    if (EntryMatches(entry, state.index, state.pci_device_id)) return &entry;
  return nullptr;
}

absl::StatusOr<std::vector<PlannedInstance>> PlacePlan(
    const GpuMigState& state, const std::vector<std::pair<std::string, unsigned>>& wanted) {
  std::vector<const ProfileChoice*> items;
  unsigned compute_slices = 0;
  for (const ProfileChoice& choice : state.profiles)
    compute_slices = std::max(compute_slices, choice.profile.slices);
  for (const auto& [name, count] : wanted) {
    const ProfileChoice* choice = FindProfile(state, name);
    if (choice == nullptr) {
      std::vector<std::string> known;
      for (const ProfileChoice& c : state.profiles) known.push_back(c.profile.name);
      return absl::InvalidArgumentError(
          absl::StrCat(GpuLabel(state), ": profile \"", name, "\" is not one of this GPU's (",
                       absl::StrJoin(known, ", "), "); fix mig-devices"));
    }
    if (count > choice->profile.instances) {
      return absl::InvalidArgumentError(absl::StrCat(
          GpuLabel(state), ": ", count, "x ", name, " do not fit: the GPU holds at most ",
          choice->profile.instances, "; lower the count"));
    }
    for (unsigned i = 0; i < count; ++i) items.push_back(choice);
  }
  // Large instances first: they have the fewest placements.
  std::stable_sort(items.begin(), items.end(), [](const ProfileChoice* a, const ProfileChoice* b) {
    unsigned size_a = a->placements.empty() ? 0 : a->placements[0].size;
    unsigned size_b = b->placements.empty() ? 0 : b->placements[0].size;
    return size_a != size_b ? size_a > size_b : a->profile.slices > b->profile.slices;
  });
  Search search{items, compute_slices, {}, 0};
  if (!search.Place(0, 0)) {
    std::vector<std::string> parts;
    for (const auto& [name, count] : wanted)
      if (count > 0) parts.push_back(absl::StrCat(count, "x ", name));
    return absl::InvalidArgumentError(absl::StrCat(
        GpuLabel(state), ": ", absl::StrJoin(parts, " + "), " does not fit: no free placement for ",
        items[std::min(search.deepest, items.size() - 1)]->profile.name, " (the GPU has ",
        compute_slices, " compute slices); choose a smaller layout"));
  }
  std::vector<PlannedInstance> planned;
  for (size_t i = 0; i < items.size(); ++i) {
    planned.push_back(PlannedInstance{items[i]->profile.name, items[i]->profile.id,
                                      items[i]->profile.slices, search.chosen[i]});
  }
  std::sort(planned.begin(), planned.end(),
            [](const auto& a, const auto& b) { return a.placement.start < b.placement.start; });
  return planned;
}

absl::StatusOr<GpuPlan> PlanGpu(const GpuMigState& state, const MigConfigEntry* entry) {
  GpuPlan plan;
  plan.index = state.index;
  plan.name = state.name;
  if (entry == nullptr) return plan;
  plan.matched = true;
  plan.enable = entry->mig_enabled;
  if (!state.capable) {
    if (!entry->mig_enabled) return plan;  // "MIG disabled" holds for a GPU without MIG
    return absl::InvalidArgumentError(
        absl::StrCat(GpuLabel(state),
                     ": this GPU cannot do MIG; limit the entry with devices or device-filter"));
  }
  if (state.mode.current != entry->mig_enabled || state.mode.pending != entry->mig_enabled) {
    plan.set_mode = true;
    plan.differences.push_back(absl::StrCat(
        GpuLabel(state), ": MIG mode is ", state.mode.current ? "enabled" : "disabled",
        state.mode.pending != state.mode.current
            ? absl::StrCat(" (", state.mode.pending ? "enabled" : "disabled", " pending)")
            : "",
        ", wanted ", entry->mig_enabled ? "enabled" : "disabled"));
  }
  std::map<std::string, unsigned> wanted;
  for (const auto& [name, count] : entry->mig_devices)
    if (count > 0) wanted[name] = count;
  std::map<std::string, unsigned> current = CurrentCounts(state);
  bool layout_ok = current == wanted && WholeComputeInstances(state);
  if (!layout_ok && state.mode.current) {
    plan.differences.push_back(
        absl::StrCat(GpuLabel(state), ": has ", Describe(current), ", wanted ", Describe(wanted)));
  }
  if (!entry->mig_enabled) {
    plan.destroy_existing = !state.instances.empty();
    return plan;
  }
  if (!state.mode.current) {
    // The profiles of a GPU are listed only while MIG is on.
    plan.placements_after_enable = !wanted.empty();
    if (!wanted.empty() && plan.differences.size() < 2)
      plan.differences.push_back(
          absl::StrCat(GpuLabel(state), ": has no MIG devices, wanted ", Describe(wanted)));
    return plan;
  }
  if (layout_ok) return plan;
  plan.destroy_existing = !state.instances.empty();
  absl::StatusOr<std::vector<PlannedInstance>> placed = PlacePlan(state, entry->mig_devices);
  if (!placed.ok()) return placed.status();
  plan.create = *std::move(placed);
  return plan;
}

}  // namespace gpunode::mig
