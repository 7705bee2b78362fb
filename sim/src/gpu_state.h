// One simulated GPU while the simulator runs: the model's values as the timeline has changed
// them, metrics that ramp between values, the energy counter, and whether the GPU is lost.
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "activity_model.h"
#include "node_model.h"

namespace gpunode::sim {

// The metrics a timeline `set` can ramp rather than step.
enum class Metric {
  kUtilizationGpu,
  kUtilizationMemory,
  kUtilizationEncoder,
  kUtilizationDecoder,
  kTemperature,
  kPower
};
constexpr size_t kMetricCount = 6;

class GpuState {
 public:
  explicit GpuState(GpuModel model);

  // Current values; a ramping metric holds its target here (read it with metric()).
  const GpuModel& model() const { return model_; }

  // The metric's value at `now`, following a ramp that is under way.
  std::optional<unsigned> metric(Metric metric, SimTime now) const;

  // The energy counter at `now` in millijoules: the model's starting value plus the integral of
  // power draw since time zero. Calls must not go back in time.
  std::optional<uint64_t> energy_mj(SimTime now);

  // MIG management replaces the mode and the MIG devices (NodeState::publish_mig_layout).
  void set_mig(bool enabled, bool pending, std::vector<MigDevice> devices) {
    model_.mig_enabled = enabled;
    model_.mig_pending = pending;
    model_.mig_devices = std::move(devices);
  }
  // Utilization integrated over time, behind the NVLink throughput counters.
  UtilizationIntegral& activity() { return activity_; }

  bool lost() const { return lost_; }
  void set_lost(bool lost) { lost_ = lost; }

  // nvmlDeviceSetComputeMode's value: DEFAULT until set, then kept as a driver keeps it until
  // reboot (here: until the simulator is configured again).
  nvmlComputeMode_t compute_mode() const { return compute_mode_; }
  void set_compute_mode(nvmlComputeMode_t mode) { compute_mode_ = mode; }

  // Timeline effects, applied at the event's time `at`.
  void apply_change(const MetricChange& change, SimTime at);
  void start_process(const ProcessInfo& process);
  void end_process(unsigned pid);
  void add_ecc_errors(uint64_t corrected, uint64_t uncorrected);
  // Rows remapped more, and a new pending/failure state where given. The GPU has remapped_rows.
  void change_remapped_rows(const TimelineEvent& event);

 private:
  struct Ramp {
    double from;
    double to;
    SimTime start;
    SimTime end;
  };
  std::optional<unsigned>& field(Metric metric);
  const std::optional<unsigned>& field(Metric metric) const;
  // Power at `t` in mW (0 when the GPU does not report it).
  double power_at(SimTime t) const;
  void advance_energy(SimTime to);
  void adjust_memory(unsigned gpu_instance_id, unsigned compute_instance_id, int64_t delta_bytes);

  GpuModel model_;
  std::array<std::optional<Ramp>, kMetricCount> ramps_;
  bool lost_ = false;
  nvmlComputeMode_t compute_mode_ = NVML_COMPUTEMODE_DEFAULT;
  UtilizationIntegral activity_;
  double energy_mj_ = 0;
  SimTime energy_time_{0};
};

}  // namespace gpunode::sim
