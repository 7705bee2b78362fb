// The configured node while the simulator runs: GPU states, handles, event sets, and the clock
// that plays the timeline. Not thread-safe: the Simulator calls it with its mutex held.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gpu_state.h"
#include "handles.h"
#include "mig_layout.h"
#include "node_model.h"

namespace gpunode::sim {

class NodeState {
 public:
  using Clock = std::chrono::steady_clock;

  // `clock_scale` simulated seconds pass per real second.
  NodeState(NodeModel model, double clock_scale);

  const NodeModel& model() const { return model_; }
  std::vector<GpuState>& gpus() { return gpus_; }

  // Time zero of the timeline is the first nvmlInit after configuration.
  void start_clock(Clock::time_point now);
  SimTime now(Clock::time_point real) const;
  // The real time at which the next timeline event is due; nullopt when none is left.
  std::optional<Clock::time_point> next_due() const;
  // Applies the timeline events due by `real`, in order. True when an event set got an event.
  bool advance(Clock::time_point real);

  nvmlDevice_t gpu_handle(unsigned index) { return gpu_handles_[index].get(); }
  // The handle of the MIG device in slot `slot` of GPU `gpu`; nullptr when the slot is empty.
  nvmlDevice_t mig_handle(unsigned gpu, unsigned slot);
  // The handle's target, or nullptr when `device` is not a handle of this configuration.
  const nvmlDevice_st* resolve(nvmlDevice_t device) const;

  // Event types a GPU can deliver: Xid always; PState and Clock when it reports them; the ECC
  // types when ECC is enabled.
  unsigned long long supported_events(unsigned gpu) const;
  nvmlEventSet_t create_event_set();
  std::shared_ptr<nvmlEventSet_st> event_set(nvmlEventSet_t set) const;
  bool free_event_set(nvmlEventSet_t set);
  void free_all_event_sets();
  // True when `set` listens to a GPU that is lost.
  bool watches_lost_gpu(const nvmlEventSet_st& set) const;

  // MIG management (node_state_mig.cc). The layout of GPU `gpu`, built from its model on first
  // use; after changing it, publish_mig_layout makes the GPU's mode, MIG devices and MIG device
  // handles follow (handles of devices that went away stop resolving).
  MigLayout& mig_layout(unsigned gpu);
  void publish_mig_layout(unsigned gpu);
  // The GPU whose layout holds the instance `handle` names; nullopt when none does.
  std::optional<unsigned> gpu_of(nvmlGpuInstance_t handle);
  std::optional<unsigned> gpu_of(nvmlComputeInstance_t handle);
  // GPUNODE_SIM_STATE: where MIG changes are saved ("" for nowhere).
  const std::string& mig_state_file() const { return mig_state_file_; }
  void set_mig_state_file(std::string path) { mig_state_file_ = std::move(path); }
  // Numbers MIG changes from 1, for GPUNODE_SIM_MIG_FAIL_AT.
  unsigned next_mig_change() { return ++mig_changes_; }

 private:
  void apply(const TimelineEvent& event);
  void deliver(unsigned gpu, unsigned long long type, unsigned long long data,
               unsigned gpu_instance_id, unsigned compute_instance_id);

  NodeModel model_;  // versions, levels and timeline; per-GPU values live in gpus_
  std::vector<GpuState> gpus_;
  double clock_scale_;
  std::optional<Clock::time_point> start_;
  size_t next_event_ = 0;
  std::vector<std::unique_ptr<nvmlDevice_st>> gpu_handles_;
  std::vector<std::vector<std::unique_ptr<nvmlDevice_st>>> mig_handles_;  // by mig_position
  std::unordered_set<const nvmlDevice_st*> valid_handles_;
  std::unordered_map<nvmlEventSet_t, std::shared_ptr<nvmlEventSet_st>> event_sets_;
  std::vector<std::unique_ptr<MigLayout>> mig_layouts_;  // by GPU; null until first used
  std::vector<std::unique_ptr<nvmlDevice_st>> retired_mig_handles_;
  std::string mig_state_file_;
  unsigned mig_changes_ = 0;
};

}  // namespace gpunode::sim
