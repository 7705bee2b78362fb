#include "mig_layout.h"

#include <algorithm>

#include "derived_ids.h"
#include "messages.h"

namespace gpunode::sim {
namespace {

bool has_processes(const GpuModel& model, unsigned gi, std::optional<unsigned> ci) {
  return std::any_of(model.processes.begin(), model.processes.end(), [&](const ProcessInfo& p) {
    return p.gpu_instance_id == gi && (!ci || p.compute_instance_id == *ci);
  });
}

// The GPU instance profile a MIG device's profile name belongs to: "1c.3g.40gb" -> "3g.40gb".
std::string_view gpu_instance_profile_name(std::string_view profile) {
  size_t c = profile.find("c.");
  return c == std::string_view::npos ? profile : profile.substr(c + 2);
}

std::optional<unsigned> compute_profile_for_slices(unsigned slices) {
  for (const ComputeInstanceProfile& p : compute_profiles_for(7))
    if (p.slices == slices) return p.index;
  return std::nullopt;
}

}  // namespace

MigLayout::MigLayout(unsigned gpu, const GpuModel& model)
    : gpu_(gpu),
      table_(mig_table_for(model.name.value_or(""),
                           model.memory ? model.memory->total_bytes / kMiB : 0)),
      capable_(model.mig_enabled.has_value()),
      enabled_(model.mig_enabled.value_or(false)),
      pending_(model.mig_pending.value_or(enabled_)) {
  if (table_ == nullptr) return;
  // Rebuild instances from the devices; a device whose id or profile does not fit the table
  // leaves the whole GPU unmanaged rather than half-modelled.
  std::vector<GpuInstanceState> instances;
  for (const MigDevice& device : model.mig_devices) {
    auto gi = std::find_if(instances.begin(), instances.end(), [&](const GpuInstanceState& g) {
      return g.id == device.gpu_instance_id;
    });
    if (gi == instances.end()) {
      const GpuInstanceProfile* profile =
          find_profile_by_name(*table_, gpu_instance_profile_name(device.profile));
      if (profile == nullptr) {
        table_ = nullptr;
        return;
      }
      GpuInstanceState state;
      state.id = device.gpu_instance_id;
      state.profile = profile;
      unsigned size = profile->placement_size;
      unsigned first_id = table_->memory_slices / size - 1;
      state.start = (device.gpu_instance_id - first_id) * size;
      if (device.gpu_instance_id < first_id || state.start + size > table_->memory_slices) {
        table_ = nullptr;
        return;
      }
      instances.push_back(std::move(state));
      gi = instances.end() - 1;
    }
    auto index = compute_profile_for_slices(device.compute_instance_slices);
    if (!index) {
      table_ = nullptr;
      return;
    }
    ComputeInstanceState ci;
    ci.id = device.compute_instance_id;
    ci.profile_index = *index;
    ci.slices = device.compute_instance_slices;
    gi->compute_instances.push_back(std::move(ci));
  }
  // Compute instances take slices in id order, as they were created.
  for (GpuInstanceState& gi : instances) {
    std::sort(gi.compute_instances.begin(), gi.compute_instances.end(),
              [](const auto& a, const auto& b) { return a.id < b.id; });
    unsigned next = 0;
    for (ComputeInstanceState& ci : gi.compute_instances) {
      ci.start = next;
      next += ci.slices;
    }
  }
  if (!restore(enabled_, pending_, std::move(instances))) table_ = nullptr;
}

bool MigLayout::restore(bool enabled, bool pending, std::vector<GpuInstanceState> instances) {
  std::vector<GpuInstanceState> kept = std::move(gpu_instances_);
  gpu_instances_.clear();
  for (GpuInstanceState& gi : instances) {
    if (gi.profile == nullptr || !fits(*gi.profile, gi.start) ||
        gi.id != gpu_instance_id_for(*table_, gi.start, gi.profile->placement_size)) {
      gpu_instances_ = std::move(kept);
      return false;
    }
    gi.handle = std::make_unique<nvmlGpuInstance_st>(nvmlGpuInstance_st{gpu_, gi.id});
    for (ComputeInstanceState& ci : gi.compute_instances) {
      ci.handle =
          std::make_unique<nvmlComputeInstance_st>(nvmlComputeInstance_st{gpu_, gi.id, ci.id});
    }
    gpu_instances_.push_back(std::move(gi));
    std::sort(gpu_instances_.begin(), gpu_instances_.end(),
              [](const auto& a, const auto& b) { return a.id < b.id; });
  }
  for (GpuInstanceState& gi : kept) {
    for (ComputeInstanceState& ci : gi.compute_instances)
      retired_compute_instances_.push_back(std::move(ci.handle));
    retired_gpu_instances_.push_back(std::move(gi.handle));
  }
  enabled_ = enabled;
  pending_ = pending;
  return true;
}

nvmlReturn_t MigLayout::set_mode(bool enable, const GpuModel& model, nvmlReturn_t* activation) {
  // Without a profile table the GPU keeps the devices its profile gave it.
  if (!capable_ || table_ == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  if (activation == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!enable && !gpu_instances_.empty()) return NVML_ERROR_IN_USE;
  pending_ = enable;
  if (!model.processes.empty() && enabled_ != enable) {
    *activation = NVML_ERROR_IN_USE;  // the reset that activates the mode needs an idle GPU
    return NVML_SUCCESS;
  }
  enabled_ = enable;
  *activation = NVML_SUCCESS;
  return NVML_SUCCESS;
}

bool MigLayout::fits(const GpuInstanceProfile& profile, unsigned start) const {
  if (std::find(profile.placement_starts.begin(), profile.placement_starts.end(), start) ==
      profile.placement_starts.end()) {
    return false;
  }
  unsigned end = start + profile.placement_size;
  unsigned compute_used = profile.compute_slices;
  unsigned same_profile = 1;
  for (const GpuInstanceState& gi : gpu_instances_) {
    unsigned gi_end = gi.start + gi.profile->placement_size;
    if (start < gi_end && gi.start < end) return false;
    compute_used += gi.profile->compute_slices;
    if (gi.profile == &profile) ++same_profile;
  }
  return compute_used <= table_->compute_slices && same_profile <= profile.instances;
}

std::vector<unsigned> MigLayout::free_starts(const GpuInstanceProfile& profile) const {
  std::vector<unsigned> starts;
  for (unsigned start : profile.placement_starts)
    if (fits(profile, start)) starts.push_back(start);
  return starts;
}

nvmlReturn_t MigLayout::create_gpu_instance(const GpuInstanceProfile& profile,
                                            std::optional<unsigned> start,
                                            nvmlGpuInstance_t* handle) {
  if (handle == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (table_ == nullptr || !enabled_) return NVML_ERROR_NOT_SUPPORTED;
  if (start) {
    if (std::find(profile.placement_starts.begin(), profile.placement_starts.end(), *start) ==
        profile.placement_starts.end()) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!fits(profile, *start)) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  } else {
    std::vector<unsigned> starts = free_starts(profile);
    if (starts.empty()) return NVML_ERROR_INSUFFICIENT_RESOURCES;
    start = starts.front();
  }
  GpuInstanceState gi;
  gi.profile = &profile;
  gi.start = *start;
  gi.id = gpu_instance_id_for(*table_, gi.start, profile.placement_size);
  gi.handle = std::make_unique<nvmlGpuInstance_st>(nvmlGpuInstance_st{gpu_, gi.id});
  *handle = gi.handle.get();
  gpu_instances_.push_back(std::move(gi));
  std::sort(gpu_instances_.begin(), gpu_instances_.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  return NVML_SUCCESS;
}

GpuInstanceState* MigLayout::find(nvmlGpuInstance_t handle) {
  for (GpuInstanceState& gi : gpu_instances_)
    if (gi.handle.get() == handle) return &gi;
  return nullptr;
}

bool MigLayout::find(nvmlComputeInstance_t handle, GpuInstanceState** gi_out,
                     ComputeInstanceState** ci_out) {
  for (GpuInstanceState& gi : gpu_instances_) {
    for (ComputeInstanceState& ci : gi.compute_instances) {
      if (ci.handle.get() != handle) continue;
      *gi_out = &gi;
      *ci_out = &ci;
      return true;
    }
  }
  return false;
}

nvmlReturn_t MigLayout::destroy_gpu_instance(nvmlGpuInstance_t handle, const GpuModel& model) {
  auto it = std::find_if(gpu_instances_.begin(), gpu_instances_.end(),
                         [&](const GpuInstanceState& gi) { return gi.handle.get() == handle; });
  if (it == gpu_instances_.end()) return NVML_ERROR_INVALID_ARGUMENT;
  if (!it->compute_instances.empty() || has_processes(model, it->id, std::nullopt))
    return NVML_ERROR_IN_USE;
  retired_gpu_instances_.push_back(std::move(it->handle));
  gpu_instances_.erase(it);
  return NVML_SUCCESS;
}

std::optional<unsigned> MigLayout::free_compute_start(const GpuInstanceState& gi,
                                                      unsigned slices) const {
  // Compute instances sit at multiples of their size (7 slices only at 0).
  for (unsigned start = 0; start + slices <= gi.profile->compute_slices; start += slices) {
    bool overlaps = std::any_of(gi.compute_instances.begin(), gi.compute_instances.end(),
                                [&](const ComputeInstanceState& ci) {
                                  return start < ci.start + ci.slices && ci.start < start + slices;
                                });
    if (!overlaps) return start;
  }
  return std::nullopt;
}

nvmlReturn_t MigLayout::create_compute_instance(GpuInstanceState& gi, unsigned profile_index,
                                                nvmlComputeInstance_t* handle) {
  if (handle == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto slices = compute_profile_slices(profile_index);
  if (!slices || *slices > gi.profile->compute_slices) return NVML_ERROR_NOT_SUPPORTED;
  auto start = free_compute_start(gi, *slices);
  if (!start) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  ComputeInstanceState ci;
  ci.profile_index = profile_index;
  ci.slices = *slices;
  ci.start = *start;
  // The lowest id not in use.
  while (std::any_of(gi.compute_instances.begin(), gi.compute_instances.end(),
                     [&](const ComputeInstanceState& other) { return other.id == ci.id; })) {
    ++ci.id;
  }
  ci.handle = std::make_unique<nvmlComputeInstance_st>(nvmlComputeInstance_st{gpu_, gi.id, ci.id});
  *handle = ci.handle.get();
  gi.compute_instances.push_back(std::move(ci));
  std::sort(gi.compute_instances.begin(), gi.compute_instances.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  return NVML_SUCCESS;
}

nvmlReturn_t MigLayout::destroy_compute_instance(nvmlComputeInstance_t handle,
                                                 const GpuModel& model) {
  GpuInstanceState* gi = nullptr;
  ComputeInstanceState* ci = nullptr;
  if (!find(handle, &gi, &ci)) return NVML_ERROR_INVALID_ARGUMENT;
  if (has_processes(model, gi->id, ci->id)) return NVML_ERROR_IN_USE;
  retired_compute_instances_.push_back(std::move(ci->handle));
  gi->compute_instances.erase(gi->compute_instances.begin() + (ci - gi->compute_instances.data()));
  return NVML_SUCCESS;
}

std::vector<MigDevice> MigLayout::mig_devices(const GpuModel& model) const {
  std::vector<MigDevice> devices;
  if (!enabled_) return devices;
  for (const GpuInstanceState& gi : gpu_instances_) {
    const GpuInstanceProfile& p = *gi.profile;
    for (const ComputeInstanceState& ci : gi.compute_instances) {
      MigDevice d;
      d.index = static_cast<unsigned>(devices.size());
      d.gpu_instance_id = gi.id;
      d.compute_instance_id = ci.id;
      d.gpu_instance_slices = p.compute_slices;
      d.compute_instance_slices = ci.slices;
      d.profile =
          ci.slices < p.compute_slices ? str_cat(ci.slices, "c.", p.name) : std::string(p.name);
      // Keep the UUID a device already had; a new one gets the derived UUID.
      for (const MigDevice& old : model.mig_devices) {
        if (old.gpu_instance_id == gi.id && old.compute_instance_id == ci.id) d.uuid = old.uuid;
      }
      if (d.uuid.empty()) {
        d.uuid = derived_uuid("MIG", str_cat(model.uuid.value_or(""), "/", gi.id, "/", ci.id));
      }
      d.memory.total_bytes = uint64_t{p.memory_mib} * kMiB;
      for (const ProcessInfo& process : model.processes) {
        if (process.gpu_instance_id == gi.id && process.compute_instance_id == ci.id)
          d.memory.used_bytes += process.used_bytes.value_or(0);
      }
      d.multiprocessors = p.multiprocessors * ci.slices / p.compute_slices;
      d.copy_engines = p.copy_engines;
      d.decoders = p.decoders;
      d.encoders = p.encoders;
      d.jpegs = p.jpegs;
      d.ofas = p.ofas;
      devices.push_back(std::move(d));
    }
  }
  return devices;
}

}  // namespace gpunode::sim
