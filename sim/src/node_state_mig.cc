// NodeState's MIG management members (declared in node_state.h).
#include "node_state.h"

namespace gpunode::sim {

MigLayout& NodeState::mig_layout(unsigned gpu) {
  if (mig_layouts_.size() < gpus_.size()) mig_layouts_.resize(gpus_.size());
  if (!mig_layouts_[gpu]) mig_layouts_[gpu] = std::make_unique<MigLayout>(gpu, gpus_[gpu].model());
  return *mig_layouts_[gpu];
}

void NodeState::publish_mig_layout(unsigned gpu) {
  MigLayout& layout = mig_layout(gpu);
  GpuState& state = gpus_[gpu];
  state.set_mig(layout.enabled(), layout.pending(), layout.mig_devices(state.model()));
  // Handles of the old devices stay allocated (a stale handle must not name a new device) but no
  // longer resolve.
  for (auto& handle : mig_handles_[gpu]) {
    valid_handles_.erase(handle.get());
    retired_mig_handles_.push_back(std::move(handle));
  }
  mig_handles_[gpu].clear();
  for (size_t m = 0; m < state.model().mig_devices.size(); ++m) {
    mig_handles_[gpu].push_back(
        std::make_unique<nvmlDevice_st>(nvmlDevice_st{gpu, static_cast<int>(m)}));
    valid_handles_.insert(mig_handles_[gpu].back().get());
  }
}

std::optional<unsigned> NodeState::gpu_of(nvmlGpuInstance_t handle) {
  for (unsigned g = 0; g < mig_layouts_.size(); ++g)
    if (mig_layouts_[g] && mig_layouts_[g]->find(handle) != nullptr) return g;
  return std::nullopt;
}

std::optional<unsigned> NodeState::gpu_of(nvmlComputeInstance_t handle) {
  GpuInstanceState* gi = nullptr;
  ComputeInstanceState* ci = nullptr;
  for (unsigned g = 0; g < mig_layouts_.size(); ++g)
    if (mig_layouts_[g] && mig_layouts_[g]->find(handle, &gi, &ci)) return g;
  return std::nullopt;
}

}  // namespace gpunode::sim
